//! Text normalisation: the one rule by which document text is stored and terms are matched,
//! shared by the pipeline (ingest, vocabulary, linker) and the engine (term lookup).
//!
//! There are two forms, for two purposes:
//!
//! * **Stored text** ([`normalize_text`]): what ingest keeps as a title or a passage, what the
//!   snapshot's `passages.parquet` holds and what the linker's byte spans point into. HTML
//!   character references are decoded once (`AT&amp;T` → `AT&T`, `&#946;` → `β`), then the text
//!   is put in Unicode NFC (canonical composition: `e` + U+0301 → `é`). Case, spacing and
//!   compatibility characters (ligatures, full-width letters) are kept, so the text reads as
//!   written and NFC text is byte-for-byte what most editors produce.
//! * **Matching key** ([`normalize_term`], [`fold_text`]): the form under which a vocabulary
//!   term, a query term and running text are compared. The NFC form, each character replaced
//!   by its compatibility form (NFKC: `ﬁ` → `fi`, `Ｗ` → `W`, no-break space → space) and
//!   lower-cased (Unicode lower-case mapping), accents removed (the combining diacritical
//!   marks U+0300–U+036F of a letter's canonical decomposition: `Sjögren` → `sjogren`), every
//!   run of white space made one space; a term's key is also trimmed. [`normalize_term_keep_case`] is the same key without the
//!   lower-casing, for terms that must match letter for letter (acronyms such as `WHO`).
//!
//! The key is computed character by character (NFKC of each character of the NFC form), so
//! that a key found in [`fold_text`]'s output maps back to a span of the original text. This
//! equals NFKC of the whole string except where a compatibility decomposition would compose
//! with a neighbour (compatibility Hangul jamo, for instance); terms and text are keyed by the
//! same function, so they still agree.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

/// The stored form of document text (titles, passages, the `text` field before splitting):
/// HTML character references (named, decimal and hexadecimal, each ending in `;`) decoded
/// once, then Unicode NFC. Borrows `s` when it is already in that form.
///
/// `&amp;lt;` becomes `&lt;` (decoded once, not twice); references without their `;`, unknown
/// names, and references to NUL or invalid code points are left as written.
///
/// # Complexity
/// * Time: **O(n)** in the length of `s`.
///
/// # Examples
/// ```
/// use agrag_engine::format::normalize::normalize_text;
/// assert_eq!(normalize_text("AT&amp;T"), "AT&T");
/// assert_eq!(normalize_text("cafe\u{301}"), "caf\u{e9}");
/// assert_eq!(normalize_text("&#x3B2;-blockers"), "β-blockers");
/// ```
pub fn normalize_text(s: &str) -> Cow<'_, str> {
    let decoded = html_escape::decode_html_entities(s);
    if unicode_normalization::is_nfc_quick(decoded.chars())
        == unicode_normalization::IsNormalized::Yes
    {
        return decoded;
    }
    Cow::Owned(decoded.nfc().collect())
}

/// Whether `c` is one of the combining diacritical marks (U+0300–U+036F) that accents Latin,
/// Greek and Cyrillic letters. These are dropped from the matching key, as search engines fold
/// accents (Lucene's `ASCIIFoldingFilter`, Unicode TR #30 "Character Foldings"), so that
/// "Sjögren" finds "Sjogren" and back. Marks of other scripts (Indic vowel signs and viramas,
/// Hebrew and Arabic points) are outside this block and kept: there they spell the word.
fn is_accent(c: char) -> bool {
    ('\u{300}'..='\u{36f}').contains(&c)
}

/// Appends the matching key of one character (its NFKC form without accents, lower-cased when
/// `lower`) to `out`; white space becomes `' '`. Appends nothing for a lone accent (a
/// combining mark of a decomposed letter).
fn fold_char(c: char, lower: bool, out: &mut String) {
    if c.is_ascii() {
        // NFKC leaves ASCII as it is, and it has no accents.
        out.push(match c {
            c if c.is_whitespace() => ' ',
            c if lower => c.to_ascii_lowercase(),
            c => c,
        });
        return;
    }
    let mut push = |k: char| {
        if k.is_whitespace() {
            out.push(' ');
        } else if lower {
            out.extend(k.to_lowercase());
        } else {
            out.push(k);
        }
    };
    for k in std::iter::once(c).nfkc() {
        // An accented letter's canonical decomposition without its accents; nothing else is
        // decomposed (Hangul syllables, say, stay whole).
        if std::iter::once(k).nfd().any(is_accent) {
            std::iter::once(k)
                .nfd()
                .filter(|&p| !is_accent(p))
                .for_each(&mut push);
        } else {
            push(k);
        }
    }
}

fn term_key(s: &str, lower: bool) -> String {
    let mut folded = String::with_capacity(s.len());
    if s.is_ascii() {
        // NFC leaves ASCII as it is; the normaliser's per-character buffering would cost more
        // than the rest of the key (a vocabulary has hundreds of thousands of terms).
        s.chars().for_each(|c| fold_char(c, lower, &mut folded));
    } else {
        s.nfc().for_each(|c| fold_char(c, lower, &mut folded));
    }
    if !folded.contains(' ') {
        return folded;
    }
    folded
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The matching key of a vocabulary term or a query term: see the [module docs](self).
/// `"  Myocardial \t INFARCTION "` → `"myocardial infarction"`, `"ﬁbrosis"` → `"fibrosis"`.
///
/// # Complexity
/// * Time: **O(n)**.
///
/// # Examples
/// ```
/// use agrag_engine::format::normalize::normalize_term;
/// assert_eq!(normalize_term("  Myocardial \t INFARCTION "), "myocardial infarction");
/// assert_eq!(normalize_term("Cafe\u{301}"), normalize_term("CAFÉ"));
/// ```
pub fn normalize_term(s: &str) -> String {
    term_key(s, true)
}

/// [`normalize_term`] without the lower-casing: the key of a term matched letter for letter.
/// `"Ｗ Ｈ Ｏ"` → `"W H O"`.
pub fn normalize_term_keep_case(s: &str) -> String {
    term_key(s, false)
}

/// Running text in matching-key form, with the way back to the text's byte offsets.
///
/// Built by [`fold_text`]. A [`normalize_term`] key found in [`FoldedText::as_str`] at byte
/// span `a..b` is an occurrence of the term in the original text at
/// [`FoldedText::source_span`]`(a, b)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedText {
    folded: String,
    /// Per byte of `folded`, the byte offset in the source of the character it came from, and
    /// one more entry (the source length); `None` when the fold kept every byte where it was
    /// (ASCII text without runs of white space), so that offsets are equal.
    origin: Option<Vec<usize>>,
}

impl FoldedText {
    /// The folded text (lower-cased, NFKC per character, white-space runs as one space).
    pub fn as_str(&self) -> &str {
        &self.folded
    }

    /// The source byte span of folded bytes `start..end`, or `None` when `start` or `end` cuts
    /// through the fold of one source character (`"ﬁ"` folds to `"fi"`: a span starting at its
    /// `i` has no source span).
    ///
    /// # Panics
    /// When `start > end` or `end` is past the folded text's length (a programmer error).
    #[track_caller]
    pub fn source_span(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        assert!(
            start <= end && end <= self.folded.len(),
            "span {start}..{end} outside the folded text"
        );
        let Some(origin) = &self.origin else {
            return Some((start, end));
        };
        let starts_char = |i: usize| i == 0 || origin[i] != origin[i - 1];
        let ends_char = |i: usize| i == self.folded.len() || origin[i] != origin[i - 1];
        (starts_char(start) && ends_char(end)).then(|| (origin[start], origin[end]))
    }
}

/// Folds running text into matching-key form (see the [module docs](self)) with a map back to
/// byte offsets of `text`. `text` should be in the stored form ([`normalize_text`]; NFC): the
/// fold does not compose characters across the text.
///
/// # Complexity
/// * Time: **O(n)**; space: **O(n)** (a `usize` per folded byte unless `text` is ASCII with
///   no runs of white space, when the offsets are equal and no map is kept).
///
/// # Examples
/// ```
/// use agrag_engine::format::normalize::{fold_text, normalize_term};
/// let text = "After a Myocardial\n  Infarction";
/// let folded = fold_text(text);
/// let key = normalize_term("myocardial infarction");
/// let at = folded.as_str().find(&key).unwrap();
/// let (s, e) = folded.source_span(at, at + key.len()).unwrap();
/// assert_eq!(&text[s..e], "Myocardial\n  Infarction");
/// ```
pub fn fold_text(text: &str) -> FoldedText {
    let is_space = |b: u8| char::from(b).is_whitespace();
    let identity = text.is_ascii()
        && !text
            .as_bytes()
            .windows(2)
            .any(|w| is_space(w[0]) && is_space(w[1]));
    if identity {
        let folded = text
            .chars()
            .map(|c| {
                if c.is_whitespace() {
                    ' '
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect();
        return FoldedText {
            folded,
            origin: None,
        };
    }
    let mut folded = String::with_capacity(text.len());
    let mut origin: Vec<usize> = Vec::with_capacity(text.len() + 1);
    let mut one = String::new();
    let mut last_space = false;
    for (i, c) in text.char_indices() {
        one.clear();
        fold_char(c, true, &mut one);
        for k in one.chars() {
            // A space right after a space is dropped: runs of white space become one.
            if k == ' ' && last_space {
                continue;
            }
            last_space = k == ' ';
            folded.push(k);
        }
        origin.resize(folded.len(), i);
    }
    origin.push(text.len());
    FoldedText {
        folded,
        origin: Some(origin),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_decodes_entities_once_and_is_nfc() {
        assert_eq!(normalize_text("AT&amp;T &lt;b&gt;"), "AT&T <b>");
        assert_eq!(normalize_text("&amp;lt;"), "&lt;");
        assert_eq!(normalize_text("5 &#37; &#x25;"), "5 % %");
        assert_eq!(
            normalize_text("AT&T and &unknown; &amp"),
            "AT&T and &unknown; &amp"
        );
        assert_eq!(normalize_text("Me\u{301}nie\u{300}re"), "M\u{e9}ni\u{e8}re");
        // Compatibility characters are kept in the stored text.
        assert_eq!(normalize_text("ﬁbrosis"), "ﬁbrosis");
        assert!(matches!(normalize_text("plain text"), Cow::Borrowed(_)));
    }

    #[test]
    fn term_keys() {
        assert_eq!(
            normalize_term("  Myocardial \t INFARCTION "),
            "myocardial infarction"
        );
        assert_eq!(normalize_term("ﬁbrosis"), "fibrosis");
        assert_eq!(
            normalize_term("Me\u{301}nie\u{300}re"),
            normalize_term("MÉNIÈRE")
        );
        assert_eq!(normalize_term("a\u{a0}b\u{2003} c"), "a b c");
        assert_eq!(normalize_term_keep_case("Ｗ Ｈ Ｏ"), "W H O");
        // Accents are folded, composed or not; marks that spell a word in other scripts and
        // Hangul syllables are kept.
        assert_eq!(normalize_term("Sjögren's Syndrome"), "sjogren's syndrome");
        assert_eq!(normalize_term("Sjo\u{308}gren"), "sjogren");
        assert_eq!(normalize_term("Ménière"), "meniere");
        assert_eq!(normalize_term("ΆΝΘΡΩΠΟΣ"), "ανθρωποσ");
        assert_eq!(normalize_term_keep_case("Ångström"), "Angstrom");
        assert_eq!(normalize_term("हिन्दी"), "हिन्दी");
        assert_eq!(normalize_term("한국어"), "한국어");
        assert_eq!(normalize_term(""), "");
        assert_eq!(normalize_term(" \n "), "");
    }

    #[test]
    fn folded_text_maps_back_to_source_spans() {
        let text = "Le  ﬁbrome\u{a0}de Ménière";
        let f = fold_text(text);
        assert_eq!(f.as_str(), "le fibrome de meniere");
        let at = f.as_str().find("fibrome").unwrap();
        let (s, e) = f.source_span(at, at + "fibrome".len()).unwrap();
        assert_eq!(&text[s..e], "ﬁbrome");
        // Inside the ligature's fold: no source span.
        assert_eq!(f.source_span(at + 1, at + 3), None);
        let at = f.as_str().find("meniere").unwrap();
        let (s, e) = f.source_span(at, f.as_str().len()).unwrap();
        assert_eq!(&text[s..e], "Ménière");
        // Every key of a term that occurs in the text is found in its fold.
        for term in ["le fibrome", "FIBROME DE", "de ménière", "de Meniere"] {
            assert!(f.as_str().contains(&normalize_term(term)), "{term}");
        }
        // A decomposed accent maps back with its letter.
        let text = "Sjo\u{308}gren";
        let f = fold_text(text);
        assert_eq!(f.as_str(), "sjogren");
        assert_eq!(f.source_span(0, 7), Some((0, text.len())));
        assert_eq!(f.source_span(0, 3), Some((0, 5)));
    }

    #[test]
    fn ascii_fold_keeps_offsets() {
        let f = fold_text("Heart Attack,\nWHO");
        assert_eq!(f.as_str(), "heart attack, who");
        assert_eq!(f.source_span(6, 12), Some((6, 12)));
        let f = fold_text("a \n b");
        assert_eq!(f.as_str(), "a b");
        assert_eq!(f.source_span(0, 3), Some((0, 5)));
    }
}
