// The report page's script: the zoomable treemap of the hierarchy and the node-link drawings,
// from the JSON in #report-data. What it did is recorded on <html> (data-report-ready,
// data-treemap-nodes, data-treemap-aggregates, data-networks-drawn, data-script-errors), so
// a headless browser can check it.
(function () {
  'use strict';
  var root = document.documentElement;
  function recordError(message) {
    var prev = root.getAttribute('data-script-errors');
    root.setAttribute('data-script-errors', (prev ? prev + ' | ' : '') + message);
  }
  window.onerror = function (message, source, line) {
    recordError(String(message) + ' (line ' + line + ')');
  };

  var SVG = 'http://www.w3.org/2000/svg';
  function svg(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    for (var k in attrs) {
      if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]);
    }
    if (parent) parent.appendChild(e);
    return e;
  }
  function tag(name, cls, text, parent) {
    var e = document.createElement(name);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }
  function fmt(n) {
    return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }
  // Cuts `s` to what fits in `px` at `size` px (an average glyph is about 0.56 em wide).
  function fit(s, px, size) {
    var max = Math.floor(px / (size * 0.56));
    if (max < 2) return '';
    return s.length <= max ? s : s.slice(0, max - 1).replace(/\s+$/, '') + '…';
  }
  // Text widths from a canvas in the page's fonts: measuring SVG text would force a layout per
  // label, which a treemap of thousands of boxes cannot afford.
  var ctx = document.createElement('canvas').getContext('2d');
  var family = (window.getComputedStyle && getComputedStyle(document.body).fontFamily) || 'sans-serif';
  var FONTS = { h: '600 11px ', t: '600 11.5px ', m: '10px ', a: 'italic 10.5px ' };
  var font = '';
  function measure(s, cls) {
    var f = FONTS[cls] + family;
    if (f !== font) { ctx.font = f; font = f; }
    return ctx.measureText(s).width;
  }
  // As much of `s` as fits in `px` in the font of `cls`, cut with an ellipsis.
  function clip(s, px, cls) {
    if (measure(s, cls) <= px) return s;
    var lo = 0, hi = s.length;
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (measure(s.slice(0, mid) + '…', cls) <= px) lo = mid; else hi = mid - 1;
    }
    return lo > 1 ? s.slice(0, lo).replace(/\s+$/, '') + '…' : '';
  }
  // A text element of `cls` at (x, y) holding as much of `s` as fits in `px`.
  function textIn(g, cls, x, y, s, px) {
    var t = clip(s, px, cls);
    if (!t) return null;
    var e = svg('text', { class: cls, x: x, y: y }, g);
    e.textContent = t;
    return e;
  }

  // ---- the tree ----
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var top = { top: true, size: 0, kids: [], level: -1, title: 'All communities' };
  var byId = {};
  data.treemap.forEach(function (d) {
    byId[d.i] = { d: d, id: d.i, size: d.s, level: d.l, kids: [], parent: null };
  });
  data.treemap.forEach(function (d) {
    var node = byId[d.i];
    var parent = d.p === null || d.p === undefined ? top : byId[d.p] || top;
    node.parent = parent;
    parent.kids.push(node);
  });
  data.aggregates.forEach(function (a) {
    var parent = a.p === null || a.p === undefined ? top : byId[a.p];
    if (parent) parent.kids.push({ agg: a, size: a.s, level: a.l, kids: [], parent: parent });
  });
  function bySize(a, b) {
    if (b.size !== a.size) return b.size - a.size;
    if (a.agg || b.agg) return a.agg ? 1 : -1;
    return a.id - b.id;
  }
  (function sortAll(n) {
    n.kids.sort(bySize);
    n.kids.forEach(sortAll);
  })(top);
  top.size = top.kids.reduce(function (s, k) { return s + k.size; }, 0);
  // Hue per level-0 community, by size order, spread by the golden angle.
  top.kids.forEach(function (k, i) {
    (function paint(n) {
      n.hue = (i * 137.508 + 210) % 360;
      n.kids.forEach(paint);
    })(k);
  });

  // ---- squarified treemap (Bruls, Huizing & van Wijk 2000) ----
  function worst(row, side) {
    var s = 0, max = 0, min = Infinity;
    row.forEach(function (a) { s += a; if (a > max) max = a; if (a < min) min = a; });
    var s2 = s * s, side2 = side * side;
    return Math.max(side2 * max / s2, s2 / (side2 * min));
  }
  function squarify(sizes, x, y, w, h) {
    var out = [];
    var total = sizes.reduce(function (s, v) { return s + v; }, 0);
    if (total <= 0 || w <= 0 || h <= 0) {
      sizes.forEach(function () { out.push([x, y, Math.max(w, 0), Math.max(h, 0)]); });
      return out;
    }
    var scale = (w * h) / total;
    var areas = sizes.map(function (s) { return s * scale; });
    var row = [];
    function place(row) {
      var s = row.reduce(function (a, b) { return a + b; }, 0);
      if (w >= h) {
        var cw = s / h, yy = y;
        row.forEach(function (a) { var hh = a / cw; out.push([x, yy, cw, hh]); yy += hh; });
        x += cw; w -= cw;
      } else {
        var rh = s / w, xx = x;
        row.forEach(function (a) { var ww = a / rh; out.push([xx, y, ww, rh]); xx += ww; });
        y += rh; h -= rh;
      }
    }
    var i = 0;
    while (i < areas.length) {
      var side = Math.min(w, h);
      if (row.length === 0 || worst(row.concat([areas[i]]), side) <= worst(row, side)) {
        row.push(areas[i]);
        i++;
      } else {
        place(row);
        row = [];
      }
    }
    if (row.length) place(row);
    return out;
  }

  // Lays out `node`'s subtree in the box; fills `out` parents first.
  function layout(node, x, y, w, h, depth, out) {
    node.box = { x: x, y: y, w: w, h: h, depth: depth };
    out.push(node);
    if (!node.kids.length) return;
    var head = node.top ? 0 : w > 56 && h > 40 ? 17 : 2;
    var pad = node.top ? 0 : w > 14 && h > 14 ? 2 : 0;
    var ix = x + pad, iy = y + head, iw = w - 2 * pad, ih = h - head - pad;
    if (iw < 1 || ih < 1) { ix = x; iy = y; iw = w; ih = h; }
    var rects = squarify(node.kids.map(function (k) { return k.size; }), ix, iy, iw, ih);
    node.kids.forEach(function (k, i) {
      var r = rects[i];
      layout(k, r[0], r[1], r[2], r[3], depth + 1, out);
    });
  }

  function fill(n) {
    if (n.agg) return '#e8ebef';
    var light = Math.max(46, 91 - n.box.depth * 10);
    return 'hsl(' + n.hue.toFixed(0) + ',48%,' + light + '%)';
  }

  var container = document.getElementById('treemap');
  var crumbs = document.getElementById('crumbs');
  var details = document.getElementById('details');
  var view = top, selected = null, lastWidth = 0;
  var HEIGHT = 640;

  function label(g, n, b) {
    var x = b.x + 4, y = b.y + 13;
    if (n.agg) {
      if (b.w > 40 && b.h > 16) {
        var t = n.agg.n + ' smaller communit' + (n.agg.n === 1 ? 'y' : 'ies');
        textIn(g, 'a', x, y, t, b.w - 8);
        if (b.h > 30) {
          textIn(g, 'a', x, y + 13, fmt(n.agg.s) + ' members', b.w - 8);
        }
      }
      return;
    }
    var d = n.d;
    if (n.kids.length) {
      if (b.h > 40 && b.w > 56) {
        textIn(g, 'h', x, y, d.t + ' · ' + fmt(d.s), b.w - 8);
      }
      return;
    }
    if (b.w < 34 || b.h < 16) return;
    var lines = Math.floor((b.h - 4) / 13);
    var title = wrap(d.t, b.w - 8, Math.min(2, lines), 't');
    var used = 0;
    title.forEach(function (t) {
      textIn(g, 't', x, y + used * 13, t, b.w - 8);
      used++;
    });
    for (var m = 0; m < d.m.length && used < lines; m++, used++) {
      textIn(g, 'm', x, y + used * 13, d.m[m], b.w - 8);
    }
  }

  // `s` in lines of at most `px` pixels in the font of `cls`, broken at spaces; the last of
  // `maxLines` lines holds the rest (cut when drawn).
  function wrap(s, px, maxLines, cls) {
    var lines = [], line = '';
    if (maxLines < 1) return lines;
    s.split(/\s+/).forEach(function (w) {
      var next = line ? line + ' ' + w : w;
      if (line && measure(next, cls) > px) { lines.push(line); line = w; } else line = next;
    });
    if (line) lines.push(line);
    if (lines.length > maxLines) {
      var rest = lines.slice(maxLines - 1).join(' ');
      lines = lines.slice(0, maxLines - 1);
      lines.push(rest);
    }
    return lines;
  }

  // Draws the view; returns the number of community boxes drawn.
  function draw() {
    var width = Math.max(320, container.clientWidth || 1200);
    lastWidth = width;
    container.textContent = '';
    var s = svg('svg', { viewBox: '0 0 ' + width + ' ' + HEIGHT, width: width, height: HEIGHT, role: 'img' }, container);
    var out = [];
    layout(view, 0, 0, width, HEIGHT, view.top ? -1 : 0, out);
    var drawn = 0;
    out.forEach(function (n) {
      if (n.top) return;
      var b = n.box;
      var g = svg('g', { class: 'n' }, s);
      var r = svg('rect', { x: b.x.toFixed(1), y: b.y.toFixed(1), width: Math.max(0, b.w).toFixed(1), height: Math.max(0, b.h).toFixed(1), fill: fill(n) }, g);
      n.rect = r;
      if (n === selected) r.setAttribute('class', 'sel');
      var tip = n.agg
        ? n.agg.n + ' smaller communities at level ' + n.agg.l + ' (' + fmt(n.agg.s) + ' members)'
        : '#' + n.id + ' · level ' + n.level + ' · ' + fmt(n.size) + ' members\n' + n.d.t + '\n' + n.d.m.join(' · ');
      svg('title', {}, g).textContent = tip;
      label(g, n, b);
      if (!n.agg) {
        drawn++;
        g.addEventListener('click', function (e) { e.stopPropagation(); select(n); });
        g.addEventListener('dblclick', function (e) {
          e.stopPropagation();
          zoom(n.kids.length ? n : n.parent);
        });
      } else {
        g.addEventListener('click', function (e) { e.stopPropagation(); if (n.parent) select(n.parent.top ? null : n.parent); });
      }
    });
    drawCrumbs();
    root.setAttribute('data-treemap-view-nodes', String(drawn));
    return drawn;
  }

  function drawCrumbs() {
    crumbs.textContent = '';
    var path = [];
    for (var n = view; n; n = n.parent) path.unshift(n);
    path.forEach(function (n, i) {
      if (i) tag('span', 'sep', '›', crumbs);
      var text = n.top ? 'All communities (' + fmt(data.communities) + ')' : '#' + n.id + ' ' + fit(n.d.t, 260, 12);
      if (n === view) tag('strong', '', text, crumbs);
      else tag('a', '', text, crumbs).addEventListener('click', function () { zoom(n); });
    });
  }

  function zoom(n) {
    view = n || top;
    draw();
  }

  function select(n) {
    if (selected && selected.rect) selected.rect.removeAttribute('class');
    selected = n;
    if (n && n.rect) n.rect.setAttribute('class', 'sel');
    // The address names the community, so a link to the page can point at it.
    try {
      if (n && window.history && history.replaceState) history.replaceState(null, '', '#community=' + n.id);
    } catch (e) { /* some browsers refuse it for file: pages; the page works without */ }
    details.textContent = '';
    if (!n) {
      tag('p', 'muted', 'Click a community to see its report.', details);
      return;
    }
    var d = n.d;
    tag('h4', '', d.t, details);
    var meta = '#' + d.i + ' · level ' + d.l + ' · ' + fmt(d.s) + ' members · ' + d.k + ' child communit' + (d.k === 1 ? 'y' : 'ies');
    if (d.w !== null && d.w !== undefined) meta += ' · ' + Math.round(d.w * 100) + '% of its relationship weight inside';
    tag('div', 'meta', meta, details);
    if (n.kids.length) tag('button', '', 'Zoom in', details).addEventListener('click', function () { zoom(n); });
    if (view !== top) tag('button', '', 'Zoom out', details).addEventListener('click', function () { zoom(view.parent || top); });
    if (n.parent && !n.parent.top) {
      tag('button', '', 'Parent #' + n.parent.id, details).addEventListener('click', function () { select(n.parent); });
    }
    tag('div', 'label', 'Top members', details);
    tag('div', '', d.m.join(' · ') || '—', details);
    tag('div', 'label', 'Summary', details);
    tag('p', '', d.u || '—', details);
    tag('div', 'label', 'Findings', details);
    var ul = tag('ul', '', null, details);
    d.f.forEach(function (f) { tag('li', '', f, ul); });
    if (!d.f.length) tag('li', 'muted', 'none', ul);
    if (d.g > d.f.length) tag('p', 'muted', (d.g - d.f.length) + ' more in reports.parquet', details);
  }

  // ---- node-link drawings (Fruchterman & Reingold 1991, deterministic start) ----
  var PALETTE = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#86bcb6'];
  // Positions of `n` nodes inside a W × H box with margins for labels. Nodes come strongest
  // first and start on a spiral from the centre, so the result is the same on every load.
  function forceLayout(n, edges, W, H) {
    var mx = 48, my = 16, pos = [], i, j, it;
    var cx = W / 2, cy = H / 2, R = Math.min(W - 2 * mx, H - 2 * my) / 2;
    for (i = 0; i < n; i++) {
      var r = R * Math.sqrt((i + 0.5) / Math.max(n, 1)), a = i * 2.39996;
      pos.push([cx + r * Math.cos(a) * (W - 2 * mx) / (H - 2 * my), cy + r * Math.sin(a)]);
    }
    if (n < 2) return pos.map(function () { return [cx, cy]; });
    var maxW = edges.reduce(function (m, e) { return Math.max(m, e[2]); }, 0) || 1;
    var k = Math.sqrt(((W - 2 * mx) * (H - 2 * my)) / n) * 0.5, t = W / 10;
    for (it = 0; it < 400; it++) {
      var disp = pos.map(function () { return [0, 0]; });
      for (i = 0; i < n; i++) {
        for (j = i + 1; j < n; j++) {
          var dx = pos[i][0] - pos[j][0], dy = pos[i][1] - pos[j][1];
          var d = Math.max(0.5, Math.sqrt(dx * dx + dy * dy)), f = (k * k) / d;
          disp[i][0] += (dx / d) * f; disp[i][1] += (dy / d) * f;
          disp[j][0] -= (dx / d) * f; disp[j][1] -= (dy / d) * f;
        }
      }
      edges.forEach(function (e) {
        var p = pos[e[0]], q = pos[e[1]];
        var dx = p[0] - q[0], dy = p[1] - q[1];
        var d = Math.max(0.5, Math.sqrt(dx * dx + dy * dy)), f = ((d * d) / k) * (0.3 + 0.7 * e[2] / maxW);
        disp[e[0]][0] -= (dx / d) * f; disp[e[0]][1] -= (dy / d) * f;
        disp[e[1]][0] += (dx / d) * f; disp[e[1]][1] += (dy / d) * f;
      });
      for (i = 0; i < n; i++) {
        // A weak spring to the centre keeps loose parts near the rest.
        disp[i][0] += (cx - pos[i][0]) * 0.04;
        disp[i][1] += (cy - pos[i][1]) * 0.04;
        var len = Math.sqrt(disp[i][0] * disp[i][0] + disp[i][1] * disp[i][1]) || 1;
        var step = Math.min(len, t);
        pos[i][0] += (disp[i][0] / len) * step;
        pos[i][1] += (disp[i][1] / len) * step;
      }
      t = Math.max(0.3, t * 0.985);
    }
    // Fit the drawing to the box.
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    pos.forEach(function (p) {
      x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]); y0 = Math.min(y0, p[1]); y1 = Math.max(y1, p[1]);
    });
    return pos.map(function (p) {
      return [
        x1 > x0 ? mx + ((p[0] - x0) / (x1 - x0)) * (W - 2 * mx) : cx,
        y1 > y0 ? my + ((p[1] - y0) / (y1 - y0)) * (H - 2 * my) : cy
      ];
    });
  }

  function drawNetworks() {
    var host = document.getElementById('networks');
    var drawn = 0;
    data.networks.forEach(function (net) {
      var card = tag('div', 'net', null, host);
      tag('h4', '', '#' + net.community_id + ' ' + net.title, card).title = net.title;
      tag('div', 'meta', fmt(net.size) + ' members, ' + fmt(net.internal_relationships) + ' relationships inside · drawn: ' +
        net.nodes.length + ' members, ' + net.edges.length + ' strongest relationships', card);
      var W = 380, H = 270;
      var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img' }, card);
      var pos = forceLayout(net.nodes.length, net.edges, W, H);
      var maxW = net.edges.reduce(function (m, e) { return Math.max(m, e[2]); }, 0) || 1;
      net.edges.slice().reverse().forEach(function (e) {
        var l = svg('line', {
          x1: pos[e[0]][0].toFixed(1), y1: pos[e[0]][1].toFixed(1), x2: pos[e[1]][0].toFixed(1), y2: pos[e[1]][1].toFixed(1),
          'stroke-width': (0.6 + 3.4 * e[2] / maxW).toFixed(2), 'stroke-opacity': (0.35 + 0.5 * e[2] / maxW).toFixed(2)
        }, s);
        svg('title', {}, l).textContent = net.nodes[e[0]].name + ' — ' + net.nodes[e[1]].name + ': weight ' + e[2];
      });
      var maxS = net.nodes.reduce(function (m, v) { return Math.max(m, v.strength); }, 0) || 1;
      var order = net.nodes.map(function (v, i) { return i; }).sort(function (a, b) { return net.nodes[b].strength - net.nodes[a].strength; });
      // Labels for the strongest members, skipping any that would overlap one already placed.
      var labelled = {}, boxes = [];
      order.forEach(function (i) {
        if (boxes.length >= 14) return;
        var name = fit(net.nodes[i].name, 120, 9.5), w = name.length * 5.4, h = 11;
        var x = pos[i][0] > W - 110 ? pos[i][0] - 8 - w : pos[i][0] + 8, y = pos[i][1] - 8;
        var clash = boxes.some(function (b) { return x < b[0] + b[2] && b[0] < x + w && y < b[1] + b[3] && b[1] < y + h; });
        if (!clash) { boxes.push([x, y, w, h]); labelled[i] = true; }
      });
      net.nodes.forEach(function (v, i) {
        var g = svg('g', {}, s);
        var r = 3.5 + 7 * Math.sqrt(v.strength / maxS);
        var color = v.group === null || v.group === undefined ? '#9ca3af' : PALETTE[v.group] || '#9ca3af';
        svg('circle', { cx: pos[i][0].toFixed(1), cy: pos[i][1].toFixed(1), r: r.toFixed(1), fill: color }, g);
        var grp = v.group === null || v.group === undefined ? 'no level-1 community' : 'level-1 community #' + net.groups[v.group][0];
        svg('title', {}, g).textContent = v.name + ' (weight inside ' + v.strength + ', ' + grp + ')';
        if (labelled[i]) {
          var tx = svg('text', { x: (pos[i][0] + r + 2).toFixed(1), y: (pos[i][1] + 3).toFixed(1) }, g);
          tx.textContent = fit(v.name, 120, 9.5);
          if (pos[i][0] > W - 110) {
            tx.setAttribute('x', (pos[i][0] - r - 2).toFixed(1));
            tx.setAttribute('text-anchor', 'end');
          }
        }
      });
      drawn++;
    });
    if (!data.networks.length) tag('p', 'muted', 'No community of two or more members to draw.', host);
    return drawn;
  }

  try {
    var nodes = draw();
    root.setAttribute('data-treemap-nodes', String(nodes));
    root.setAttribute('data-treemap-aggregates', String(data.aggregates.length));
    root.setAttribute('data-networks-drawn', String(drawNetworks()));
    // `#community=ID` opens the page zoomed on that community (on its parent for a leaf).
    var wanted = /^#community=(\d+)$/.exec(window.location.hash || '');
    var target = wanted ? byId[Number(wanted[1])] : null;
    if (target) {
      zoom(target.kids.length ? target : target.parent);
      select(target);
    } else if (top.kids.length && top.kids[0].d) {
      select(top.kids[0]);
    }
    window.addEventListener('resize', function () {
      if (Math.abs((container.clientWidth || 0) - lastWidth) > 8) draw();
    });
    root.setAttribute('data-report-ready', '1');
  } catch (e) {
    recordError(String((e && e.stack) || e));
  }
})();
