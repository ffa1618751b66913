//! A small tokenizer for the document-level rules: lower-cased words, numbers and symbols.
//!
//! The rules of [`super::tags`] and [`super::age`] look for short word sequences ("cross
//! sectional", "older than 65 years"); they work on these tokens rather than on raw text so
//! that hyphens, case and spacing variants ("cross-sectional", "Cross sectional") need no
//! separate patterns.

use std::borrow::Cow;

/// One token of a text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token<'a> {
    /// A run of letters and digits that starts with a letter, lower-cased: borrowed from the
    /// text when it is lower case there already (most words), so that tokenizing allocates
    /// only for the others.
    Word(Cow<'a, str>),
    /// A number: digits with an optional decimal part (`60.5`, `60,5`) or thousands groups
    /// (`1,099`).
    Num(f64),
    /// Any other non-space character.
    Sym(char),
}

impl Token<'_> {
    /// The word, if this is one.
    pub(crate) fn word(&self) -> Option<&str> {
        match self {
            Token::Word(w) => Some(w),
            _ => None,
        }
    }

    /// Whether this is the word `w`.
    pub(crate) fn is(&self, w: &str) -> bool {
        self.word() == Some(w)
    }

    /// Whether this is one of the words `ws`.
    pub(crate) fn is_any(&self, ws: &[&str]) -> bool {
        self.word().is_some_and(|x| ws.contains(&x))
    }
}

/// A word of `text` lower-cased ([`str::to_lowercase`]), borrowed when it already is.
fn lower_word(word: &str) -> Cow<'_, str> {
    if word.is_ascii() {
        if word.bytes().any(|b| b.is_ascii_uppercase()) {
            Cow::Owned(word.to_ascii_lowercase())
        } else {
            Cow::Borrowed(word)
        }
    } else {
        Cow::Owned(word.to_lowercase())
    }
}

/// Splits `text` into tokens. Linear in the text length.
pub(crate) fn tokenize(text: &str) -> Vec<Token<'_>> {
    let bytes = text.as_bytes();
    let digit_at = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_digit);
    let mut out = Vec::new();
    // `i` is a byte offset of `text`, always at a char boundary.
    let mut i = 0;
    while let Some(c) = text[i..].chars().next() {
        if c.is_whitespace() {
            i += c.len_utf8();
        } else if c.is_alphabetic() {
            let start = i;
            let end = text[start..]
                .char_indices()
                .find(|&(_, c)| !c.is_alphanumeric())
                .map_or(text.len(), |(k, _)| start + k);
            out.push(Token::Word(lower_word(&text[start..end])));
            i = end;
        } else if c.is_ascii_digit() {
            // Digits, group commas and decimal points are ASCII: the number is read by byte.
            let mut s = String::new();
            while digit_at(i) {
                s.push(char::from(bytes[i]));
                i += 1;
            }
            // Thousands groups: `1,099` (a comma then exactly three digits).
            while bytes.get(i) == Some(&b',')
                && (1..=3).all(|k| digit_at(i + k))
                && !digit_at(i + 4)
            {
                s.push_str(&text[i + 1..i + 4]);
                i += 4;
            }
            // Decimal part: `60.5`, `60,5` or `60·5`.
            let point = match bytes.get(i) {
                Some(b'.' | b',') => 1,
                _ if text[i..].starts_with('·') => '·'.len_utf8(),
                _ => 0,
            };
            if point > 0 && digit_at(i + point) {
                s.push('.');
                i += point;
                while digit_at(i) {
                    s.push(char::from(bytes[i]));
                    i += 1;
                }
            }
            out.push(Token::Num(s.parse().unwrap_or(f64::NAN)));
        } else {
            out.push(Token::Sym(c));
            i += c.len_utf8();
        }
    }
    out
}

/// The words of `tokens` in order, symbols and numbers left out: the sequence phrases are
/// matched against, so "cross-sectional" and "cross sectional" are both `[cross, sectional]`.
pub(crate) fn words<'t>(tokens: &'t [Token<'_>]) -> Vec<&'t str> {
    tokens.iter().filter_map(Token::word).collect()
}

/// Whether `phrase` (space-separated lower-case words) occurs as consecutive words in `words`.
pub(crate) fn contains_phrase(words: &[&str], phrase: &str) -> bool {
    let p: Vec<&str> = phrase.split(' ').collect();
    !p.is_empty() && words.windows(p.len()).any(|w| w == p.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The tokenizer as first written, over a vector of chars with a string per word: what
    /// [`tokenize`] must give.
    fn tokenize_reference(text: &str) -> Vec<Token<'static>> {
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_whitespace() {
                i += 1;
            } else if c.is_alphabetic() {
                let start = i;
                while i < chars.len() && chars[i].is_alphanumeric() {
                    i += 1;
                }
                let w: String = chars[start..i].iter().collect();
                out.push(Token::Word(Cow::Owned(w.to_lowercase())));
            } else if c.is_ascii_digit() {
                let mut s = String::new();
                while i < chars.len() && chars[i].is_ascii_digit() {
                    s.push(chars[i]);
                    i += 1;
                }
                while chars.get(i) == Some(&',')
                    && (1..=3).all(|k| chars.get(i + k).is_some_and(char::is_ascii_digit))
                    && !chars.get(i + 4).is_some_and(char::is_ascii_digit)
                {
                    s.extend(&chars[i + 1..i + 4]);
                    i += 4;
                }
                if matches!(chars.get(i), Some('.' | ',' | '·'))
                    && chars.get(i + 1).is_some_and(char::is_ascii_digit)
                {
                    s.push('.');
                    i += 1;
                    while i < chars.len() && chars[i].is_ascii_digit() {
                        s.push(chars[i]);
                        i += 1;
                    }
                }
                out.push(Token::Num(s.parse().unwrap_or(f64::NAN)));
            } else {
                out.push(Token::Sym(c));
                i += 1;
            }
        }
        out
    }

    #[test]
    fn the_reference_tokens_on_every_shipped_text() {
        let mut texts: Vec<String> = [
            "",
            "İstanbul ÆSIR Straße naïve café ΣΊΣΥΦΟΣ 東京 ǅemal x²y ⅷ",
            "1,099 1,0999 1,09 12,345,678 60.5 60,5 60·5 60· 7. 3,á 2,3é ٣ ½",
            "  tabs\tand\u{a0}spaces\u{2003}mixed  ",
        ]
        .iter()
        .map(|t| (*t).to_owned())
        .collect();
        let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../data/pubmedqa/documents.jsonl");
        let shipped = std::fs::read_to_string(&corpus).expect("the shipped corpus");
        for line in shipped.lines() {
            let doc: serde_json::Value = serde_json::from_str(line).expect("a JSON document");
            texts.push(doc["title"].as_str().unwrap_or_default().to_owned());
            for p in doc["passages"].as_array().into_iter().flatten() {
                texts.push(p.as_str().unwrap_or_default().to_owned());
            }
        }
        assert!(texts.len() > 3_000, "{} texts", texts.len());
        for t in &texts {
            assert_eq!(tokenize(t), tokenize_reference(t), "{t:?}");
        }
    }

    proptest! {
        #[test]
        fn the_reference_tokens_on_any_text(t in "[a-zA-Z0-9 ,.·\\-ÀßİΣσ東²½\u{a0}\u{300}]{0,40}") {
            prop_assert_eq!(tokenize(&t), tokenize_reference(&t));
        }
    }

    #[test]
    fn words_numbers_symbols() {
        let t = tokenize("A 45-year-old man; 1,099 Women aged 60.5 ± 2");
        assert_eq!(
            t,
            vec![
                Token::Word("a".into()),
                Token::Num(45.0),
                Token::Sym('-'),
                Token::Word("year".into()),
                Token::Sym('-'),
                Token::Word("old".into()),
                Token::Word("man".into()),
                Token::Sym(';'),
                Token::Num(1099.0),
                Token::Word("women".into()),
                Token::Word("aged".into()),
                Token::Num(60.5),
                Token::Sym('±'),
                Token::Num(2.0),
            ]
        );
    }

    #[test]
    fn phrases_ignore_hyphens_and_case() {
        let t = tokenize("A Cross-sectional survey");
        let w = words(&t);
        assert!(contains_phrase(&w, "cross sectional"));
        assert!(!contains_phrase(&w, "sectional cross"));
        // "8,5" is a decimal; "12,345,678" is one number.
        assert_eq!(tokenize("8,5")[0], Token::Num(8.5));
        assert_eq!(tokenize("12,345,678")[0], Token::Num(12_345_678.0));
    }
}
