//! Abbreviations defined in the text: "programmed cell death (PCD)".
//!
//! Implements the algorithm of Schwartz & Hearst (2003), "A simple algorithm for identifying
//! abbreviation definitions in biomedical text", PSB 2003, 451–462,
//! <https://psb.stanford.edu/psb-online/proceedings/psb03/schwartz.pdf>:
//! * a short-form candidate is the text inside parentheses (cut at the first `;` or `,`) of
//!   2–10 characters and at most two words, starting with a letter or digit; we also require
//!   an upper-case letter, which keeps out "(n)", "(ie)" and "(range)";
//! * the long-form candidate is at most `min(|SF| + 5, 2·|SF|)` words before the parenthesis,
//!   within the sentence;
//! * the long form is the shortest suffix of that candidate in which the short form's letters
//!   and digits occur in order, read right to left, with the first one at the start of a word.

/// One abbreviation definition found in a text. Offsets are bytes of that text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// The short form as written, e.g. `PCD`.
    pub short: String,
    /// Start of the long form.
    pub long_start: usize,
    /// One past the end of the long form (just before the space and parenthesis).
    pub long_end: usize,
    /// Start of the parenthesis that holds the short form.
    pub paren_start: usize,
    /// One past its closing parenthesis.
    pub paren_end: usize,
}

/// Longest text inside parentheses considered, in bytes.
const MAX_PAREN_BYTES: usize = 40;

fn valid_short_form(sf: &str) -> bool {
    let n = sf.chars().count();
    (2..=10).contains(&n)
        && sf.split_whitespace().count() <= 2
        && sf.chars().next().is_some_and(char::is_alphanumeric)
        && sf.chars().any(char::is_uppercase)
        && sf
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '-' | ' ' | '/' | '\''))
}

/// Start of the sentence that holds byte `end` of `text`: just after the last `;`, `:`, `!`,
/// `?`, `(`, `)`, `[`, `]`, or a `.` followed by a space.
fn sentence_start(text: &str, end: usize) -> usize {
    let head = &text[..end];
    let mut prev: Option<char> = None;
    for (i, c) in head.char_indices().rev() {
        let stop = matches!(c, ';' | ':' | '!' | '?' | '(' | ')' | '[' | ']')
            || (c == '.' && prev.is_some_and(char::is_whitespace));
        if stop {
            return i + c.len_utf8();
        }
        prev = Some(c);
    }
    0
}

/// Schwartz & Hearst's `findBestLongForm`: the byte offset in `candidate` where the long form
/// of `short` starts, if any.
fn best_long_form(short: &str, candidate: &str) -> Option<usize> {
    let sf: Vec<char> = short.chars().flat_map(char::to_lowercase).collect();
    let lf: Vec<(usize, char)> = candidate
        .char_indices()
        .map(|(i, c)| (i, c.to_lowercase().next().unwrap_or(c)))
        .collect();
    let mut l = lf.len();
    for (k, &c) in sf.iter().enumerate().rev() {
        if !c.is_alphanumeric() {
            continue;
        }
        loop {
            if l == 0 {
                return None;
            }
            l -= 1;
            let first_of_short = k == 0;
            let inside_word = l > 0 && lf[l - 1].1.is_alphanumeric();
            if lf[l].1 == c && !(first_of_short && inside_word) {
                break;
            }
        }
    }
    // Widen to the start of the word (as the original does with lastIndexOf(" ")).
    let at = lf[l].0;
    Some(
        candidate[..at]
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8()),
    )
}

/// Every abbreviation definition in `text`, in text order.
///
/// # Complexity
/// * Time: **O(n)**: the look-back from a parenthesis stops at the previous parenthesis (a
///   sentence boundary), and the look-ahead at the next one, so every byte is read a bounded
///   number of times.
pub fn find_definitions(text: &str) -> Vec<Definition> {
    let mut out = Vec::new();
    for (open, _) in text.match_indices('(') {
        let rest = &text[open + 1..];
        let Some(close) = rest.find([')', '(']) else {
            continue;
        };
        if close > MAX_PAREN_BYTES || !rest[close..].starts_with(')') {
            continue;
        }
        let inner = &rest[..close];
        let short = inner.split([';', ',']).next().unwrap_or("").trim();
        if !valid_short_form(short) {
            continue;
        }
        let start = sentence_start(text, open);
        let candidate = text[start..open].trim_end();
        let long_end = start + candidate.len();
        let n = short.chars().count();
        let max_words = (n + 5).min(2 * n);
        // Keep at most `max_words` words of the candidate.
        let mut word_starts: Vec<usize> = Vec::new();
        let mut in_word = false;
        for (i, c) in candidate.char_indices() {
            if c.is_whitespace() {
                in_word = false;
            } else if !in_word {
                in_word = true;
                word_starts.push(i);
            }
        }
        if word_starts.is_empty() {
            continue;
        }
        let first = word_starts[word_starts.len().saturating_sub(max_words)];
        let window = &candidate[first..];
        let Some(at) = best_long_form(short, window) else {
            continue;
        };
        let long = &window[at..];
        if long.chars().count() <= n || long == short {
            continue;
        }
        out.push(Definition {
            short: short.to_owned(),
            long_start: start + first + at,
            long_end,
            paren_start: open,
            paren_end: open + 1 + close + 1,
        });
    }
    out
}

/// Byte spans of the whole-word, case-sensitive occurrences of `short` (or its plural
/// `short` + `s`) in `text`.
#[cfg(test)]
pub fn occurrences(text: &str, short: &str) -> Vec<(usize, usize)> {
    ShortForms::new(&[short])
        .occurrences_in(text)
        .pop()
        .unwrap_or_default()
}

/// Up to this many short forms are each found by a scan of their own ([`str::match_indices`]):
/// a few scans of a passage cost less than building an automaton, and most documents define
/// one or two.
const SCANS_PER_FORM: usize = 4;

/// The short forms a document defines, compiled once to be found in each of its segments
/// ([`occurrences_in`](Self::occurrences_in)).
pub struct ShortForms<'a> {
    shorts: Vec<&'a str>,
    /// `None` for [`SCANS_PER_FORM`] forms or fewer, or for a pattern set the automaton
    /// cannot hold: then each form is searched on its own.
    automaton: Option<aho_corasick::AhoCorasick>,
}

impl<'a> ShortForms<'a> {
    /// Compiles `shorts` (case-sensitive, matched as given).
    pub fn new(shorts: &[&'a str]) -> Self {
        // An automaton over a handful of short forms: the noncontiguous NFA is the cheapest
        // kind to build, and building, not scanning, is what such a small set costs (the DFA
        // the crate picks by default for few patterns took 3 % of a 10⁵-document run's CPU).
        // It is built once per document, not once per segment: the per-segment builds were
        // 4 % of a 10⁵-document run's CPU. The kind changes no match.
        let automaton = if shorts.len() <= SCANS_PER_FORM {
            None
        } else {
            aho_corasick::AhoCorasick::builder()
                .kind(Some(aho_corasick::AhoCorasickKind::NoncontiguousNFA))
                .build(shorts)
                .ok()
        };
        Self {
            shorts: shorts.to_vec(),
            automaton,
        }
    }

    /// For each short form, in the order given to [`new`](Self::new), the byte spans of its
    /// whole-word occurrences (or of its plural, the short form + `s`) in `text`, in text
    /// order. Occurrences of one short form are found left to right without overlapping each
    /// other (as [`str::match_indices`] does).
    ///
    /// # Complexity
    /// * Time: **O(n + m)** for `n` bytes of text and `m` raw matches: one Aho-Corasick scan
    ///   for all short forms, not one scan per short form.
    pub fn occurrences_in(&self, text: &str) -> Vec<Vec<(usize, usize)>> {
        let mut out = vec![Vec::new(); self.shorts.len()];
        if self.shorts.is_empty() {
            return out;
        }
        let Some(automaton) = &self.automaton else {
            // A few forms, or a pathological pattern set: one scan per form.
            for (found, short) in out.iter_mut().zip(&self.shorts) {
                *found = text
                    .match_indices(short)
                    .filter_map(|(s, m)| whole_word(text, s, s + m.len()))
                    .collect();
            }
            return out;
        };
        // Where the next match of each form may start: matches of one form do not overlap.
        let mut next = vec![0usize; self.shorts.len()];
        for m in automaton.find_overlapping_iter(text) {
            let p = m.pattern().as_usize();
            if m.start() < next[p] {
                continue;
            }
            next[p] = m.end();
            if let Some(span) = whole_word(text, m.start(), m.end()) {
                out[p].push(span);
            }
        }
        out
    }
}

/// The span `s..e` of a match, widened by a plural `s`, if it is a whole word.
fn whole_word(text: &str, s: usize, e: usize) -> Option<(usize, usize)> {
    let alnum_at = |i: usize| text[i..].chars().next().is_some_and(char::is_alphanumeric);
    if text[..s]
        .chars()
        .next_back()
        .is_some_and(char::is_alphanumeric)
    {
        return None;
    }
    let mut e = e;
    if text[e..].starts_with('s') && !alnum_at(e + 1) {
        e += 1;
    }
    (!alnum_at(e)).then_some((s, e))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn pairs(text: &str) -> Vec<(String, String)> {
        find_definitions(text)
            .into_iter()
            .map(|d| (d.short.clone(), text[d.long_start..d.long_end].to_owned()))
            .collect()
    }

    #[test]
    fn schwartz_hearst_definitions() {
        let text = "Programmed cell death (PCD) is regulated. The lace plant (Aponogeton \
                    madagascariensis) has it. Pore (PTP) formation: the mitochondrial \
                    permeability transition pore (PTP); cyclosporine A (CsA, 5 mg); \
                    heart rate variability (HRV) and p < 0.05 (n = 12).";
        assert_eq!(
            pairs(text),
            vec![
                ("PCD".to_owned(), "Programmed cell death".to_owned()),
                ("PTP".to_owned(), "permeability transition pore".to_owned()),
                ("CsA".to_owned(), "cyclosporine A".to_owned()),
                ("HRV".to_owned(), "heart rate variability".to_owned()),
            ]
        );
    }

    #[test]
    fn first_letter_starts_a_word() {
        // "H" of "HD" must start a word: "Hirschsprung disease", not "...sprung disease".
        assert_eq!(
            pairs("children with Hirschsprung disease (HD) were seen"),
            vec![("HD".to_owned(), "Hirschsprung disease".to_owned())]
        );
        // No letters in order: no definition.
        assert!(pairs("the new device (XYZ) was used").is_empty());
    }

    #[test]
    fn multibyte_spaces_and_letters() {
        // A no-break space (two bytes) just before the long form.
        let t = "seen in\u{a0}mitochondrial potential (MP) and MP loss";
        let d = find_definitions(t);
        assert_eq!(d.len(), 1);
        assert_eq!(
            &t[d[0].long_start..d[0].long_end],
            "mitochondrial potential"
        );
        // Greek letters have no Latin counterpart in the long form: no definition, but uses
        // are still found.
        let t = "membrane potential (ΔΨm) and ΔΨm loss";
        assert!(find_definitions(t).is_empty());
        assert_eq!(occurrences(t, "ΔΨm").len(), 2);
    }

    proptest! {
        #[test]
        fn never_panics(text in "[ a-zA-Z(),.;\u{a0}\u{394}\u{3a8}0-9-]{0,80}") {
            for d in find_definitions(&text) {
                prop_assert!(d.long_start < d.long_end && d.long_end <= d.paren_start);
                prop_assert!(text.is_char_boundary(d.long_start));
                let _ = occurrences(&text, &d.short);
            }
        }
    }

    #[test]
    fn occurrences_are_whole_words_with_plural() {
        let t = "PCD and PCDs but not EPCD or PCDx; (PCD).";
        assert_eq!(occurrences(t, "PCD"), vec![(0, 3), (8, 12), (36, 39)]);
    }

    #[test]
    fn occurrences_of_each_form_are_found_in_one_scan() {
        let t = "PCD and PCDs, A-A-A and HD; HDs of PCD-HD (HD) in DNA-PCD.";
        // Six forms go through the automaton; any four or fewer are scanned one by one.
        let shorts = ["PCD", "HD", "A-A", "PCD-HD", "DNA", "HDs"];
        assert!(shorts.len() > SCANS_PER_FORM);
        let forms = ShortForms::new(&shorts);
        assert!(forms.automaton.is_some());
        let each = forms.occurrences_in(t);
        // The forms compiled once find the same in another text.
        assert_eq!(forms.occurrences_in("HD (HD)")[1], vec![(0, 2), (4, 6)]);
        for (short, found) in shorts.iter().zip(&each) {
            let one: Vec<(usize, usize)> = t
                .match_indices(short)
                .filter_map(|(s, m)| whole_word(t, s, s + m.len()))
                .collect();
            assert_eq!(found, &one, "{short}");
        }
        // "A-A" in "A-A-A" is found once, as match_indices finds it, not twice.
        assert_eq!(each[2].len(), 1);
        assert_eq!(each[1].len(), 4);
        for few in [&shorts[..1], &shorts[1..3], &shorts[2..6]] {
            let scanned = ShortForms::new(few);
            assert!(scanned.automaton.is_none());
            let k = shorts.iter().position(|s| *s == few[0]).unwrap();
            assert_eq!(scanned.occurrences_in(t), each[k..k + few.len()].to_vec());
        }
    }
}
