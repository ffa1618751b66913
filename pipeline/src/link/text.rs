//! A small tokenizer for the document-level rules: lower-cased words, numbers and symbols.
//!
//! The rules of [`super::tags`] and [`super::age`] look for short word sequences ("cross
//! sectional", "older than 65 years"); they work on these tokens rather than on raw text so
//! that hyphens, case and spacing variants ("cross-sectional", "Cross sectional") need no
//! separate patterns.

/// One token.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token {
    /// A run of letters and digits that starts with a letter, lower-cased.
    Word(String),
    /// A number: digits with an optional decimal part (`60.5`, `60,5`) or thousands groups
    /// (`1,099`).
    Num(f64),
    /// Any other non-space character.
    Sym(char),
}

impl Token {
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

/// Splits `text` into tokens. Linear in the text length.
pub(crate) fn tokenize(text: &str) -> Vec<Token> {
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
            out.push(Token::Word(w.to_lowercase()));
        } else if c.is_ascii_digit() {
            let mut s = String::new();
            while i < chars.len() && chars[i].is_ascii_digit() {
                s.push(chars[i]);
                i += 1;
            }
            // Thousands groups: `1,099` (a comma then exactly three digits).
            while chars.get(i) == Some(&',')
                && (1..=3).all(|k| chars.get(i + k).is_some_and(char::is_ascii_digit))
                && !chars.get(i + 4).is_some_and(char::is_ascii_digit)
            {
                s.extend(&chars[i + 1..i + 4]);
                i += 4;
            }
            // Decimal part: `60.5` or `60,5`.
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

/// The words of `tokens` in order, symbols and numbers left out: the sequence phrases are
/// matched against, so "cross-sectional" and "cross sectional" are both `[cross, sectional]`.
pub(crate) fn words(tokens: &[Token]) -> Vec<&str> {
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
