//! MeSH age groups from the ages a text states ("aged 35 to 65 years", "mean age 62 ± 8
//! years", "women aged 50 and older", "a 45-year-old man") and from age words ("children",
//! "elderly").
//!
//! MeSH defines each age group by an age span (its scope notes, MeSH 2024); an indexer assigns
//! every group the study population overlaps. We do the same with the spans below:
//!
//! | heading | ages (years) |
//! | --- | --- |
//! | Infant, Newborn | birth – 1 month |
//! | Infant | 1 – 23 months |
//! | Child, Preschool | 2 – 5 |
//! | Child | 6 – 12 |
//! | Adolescent | 13 – 18 |
//! | Young Adult | 19 – 24 |
//! | Adult | 19 – 44 |
//! | Middle Aged | 45 – 64 |
//! | Aged | 65 – 79 |
//! | Aged, 80 and over | 80 and over |

use super::text::Token;

/// Age groups with their spans in years, `[lo, hi)`.
pub(crate) const AGE_GROUPS: &[(&str, f64, f64)] = &[
    ("Infant, Newborn", 0.0, 1.0 / 12.0),
    ("Infant", 1.0 / 12.0, 2.0),
    ("Child, Preschool", 2.0, 6.0),
    ("Child", 6.0, 13.0),
    ("Adolescent", 13.0, 19.0),
    ("Young Adult", 19.0, 25.0),
    ("Adult", 19.0, 45.0),
    ("Middle Aged", 45.0, 65.0),
    ("Aged", 65.0, 80.0),
    ("Aged, 80 and over", 80.0, f64::INFINITY),
];

/// Age words and the groups they name. Each entry is a phrase of lower-case words.
pub(crate) const AGE_WORDS: &[(&str, &[&str])] = &[
    ("newborn", &["Infant, Newborn"]),
    ("newborns", &["Infant, Newborn"]),
    ("neonate", &["Infant, Newborn"]),
    ("neonates", &["Infant, Newborn"]),
    ("neonatal", &["Infant, Newborn"]),
    ("preterm infants", &["Infant, Newborn"]),
    ("infant", &["Infant"]),
    ("infants", &["Infant"]),
    ("toddlers", &["Child, Preschool"]),
    ("preschool", &["Child, Preschool"]),
    ("children", &["Child"]),
    ("child", &["Child"]),
    ("schoolchildren", &["Child"]),
    ("pediatric", &["Child"]),
    ("paediatric", &["Child"]),
    ("adolescent", &["Adolescent"]),
    ("adolescents", &["Adolescent"]),
    ("adolescence", &["Adolescent"]),
    ("teenagers", &["Adolescent"]),
    ("teenage", &["Adolescent"]),
    ("young adults", &["Young Adult"]),
    ("adults", &["Adult"]),
    ("adult patients", &["Adult"]),
    ("middle aged", &["Middle Aged"]),
    ("elderly", &["Aged"]),
    ("older adults", &["Aged"]),
    ("older patients", &["Aged"]),
    ("older people", &["Aged"]),
    ("older women", &["Aged"]),
    ("older men", &["Aged"]),
    ("geriatric", &["Aged"]),
    ("octogenarians", &["Aged, 80 and over"]),
    ("nonagenarians", &["Aged, 80 and over"]),
];

const YEAR_UNITS: &[&str] = &["years", "year", "yrs", "yr", "y", "yo"];
const MONTH_UNITS: &[&str] = &["months", "month", "mo", "mos"];
const WEEK_UNITS: &[&str] = &["weeks", "week", "wk", "wks"];
const DAY_UNITS: &[&str] = &["days", "day", "d"];
const AGE_CONTEXT: &[&str] = &["age", "aged", "ages", "old", "older", "younger", "elderly"];
/// Open upper end of "aged N and over": 80+ only when N is already old (observed indexing:
/// "18 years and over" is tagged up to Aged, "over 65" also gets Aged, 80 and over).
const OPEN_END_YEARS: f64 = 79.0;
const OPEN_END_OLD_FROM_YEARS: f64 = 60.0;
/// Half-width of the ages assumed around a mean or median age given without a standard
/// deviation ("mean age 62 years" → 52–72).
const MEAN_SPREAD_YEARS: f64 = 10.0;

fn unit_years(t: Option<&Token>) -> Option<f64> {
    let w = t?.word()?;
    if YEAR_UNITS.contains(&w) {
        Some(1.0)
    } else if MONTH_UNITS.contains(&w) {
        Some(1.0 / 12.0)
    } else if WEEK_UNITS.contains(&w) {
        Some(1.0 / 52.0)
    } else if DAY_UNITS.contains(&w) {
        Some(1.0 / 365.0)
    } else {
        None
    }
}

fn is_dash(t: Option<&Token>) -> bool {
    matches!(t, Some(Token::Sym('-' | '–' | '—' | '−')))
}

/// The token index just past a unit at `i` (a unit word, or `-year-old`), with the unit in
/// years; skips one hyphen before the unit.
fn unit_at(tokens: &[Token], i: usize) -> Option<(usize, f64)> {
    let j = if is_dash(tokens.get(i)) { i + 1 } else { i };
    unit_years(tokens.get(j)).map(|u| (j + 1, u))
}

/// Age intervals in years stated in `tokens`.
pub(crate) fn age_intervals(tokens: &[Token]) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let Token::Num(n1) = tokens[i] else {
            i += 1;
            continue;
        };
        // A tolerance ("± 5 years", "+/- 5 y") is not an age.
        let before = |k: usize| i.checked_sub(k).and_then(|j| tokens.get(j));
        if matches!(before(1), Some(Token::Sym('±')))
            || (matches!(before(1), Some(Token::Sym('-')))
                && matches!(before(2), Some(Token::Sym('/'))))
        {
            i += 1;
            continue;
        }
        // Range: N1 (-|to|and) N2 unit.
        let mut n2 = None;
        let mut next = i + 1;
        if (is_dash(tokens.get(i + 1))
            || tokens.get(i + 1).is_some_and(|t| t.is_any(&["to", "and"])))
            && let Some(Token::Num(x)) = tokens.get(i + 2)
        {
            n2 = Some(*x);
            next = i + 3;
        }
        let unit = unit_at(tokens, next);
        // Age context: an age word among the 6 tokens before, or "old"/"of age"/"older" after.
        let ctx_before = (1..=6).any(|k| before(k).is_some_and(|t| t.is_any(AGE_CONTEXT)));
        let after = unit.map_or(next, |(j, _)| j);
        // "45-year-old": one hyphen may sit between the unit and "old".
        let a = if is_dash(tokens.get(after)) {
            after + 1
        } else {
            after
        };
        let ctx_after = tokens.get(a).is_some_and(|t| t.is_any(&["old", "older"]))
            || (tokens.get(a).is_some_and(|t| t.is("of"))
                && tokens.get(a + 1).is_some_and(|t| t.is("age")));
        let aged_just_before =
            (1..=2).any(|k| before(k).is_some_and(|t| t.is_any(&["age", "aged"])));
        if !(ctx_before || ctx_after) || (unit.is_none() && !aged_just_before) {
            i += 1;
            continue;
        }
        let u = unit.map_or(1.0, |(_, u)| u);
        let (lo, hi) = if let Some(n2) = n2 {
            (n1 * u, n2 * u)
        } else {
            let low_bound = matches!(before(1), Some(Token::Sym('>' | '≥')))
                || before(1).is_some_and(|t| t.is_any(&["over", "above", "least"]))
                || (before(1).is_some_and(|t| t.is("than"))
                    && before(2).is_some_and(|t| t.is_any(&["older", "more", "greater"])))
                || (tokens.get(after).is_some_and(|t| t.is_any(&["and", "or"]))
                    && tokens
                        .get(after + 1)
                        .is_some_and(|t| t.is_any(&["older", "over", "above", "more"])))
                || matches!(tokens.get(after), Some(Token::Sym('+')));
            let high_bound = matches!(before(1), Some(Token::Sym('<' | '≤')))
                || before(1).is_some_and(|t| t.is_any(&["under", "below"]))
                || (before(1).is_some_and(|t| t.is("than"))
                    && before(2).is_some_and(|t| t.is_any(&["younger", "less"])));
            let x = n1 * u;
            if low_bound {
                let end = if x >= OPEN_END_OLD_FROM_YEARS {
                    f64::INFINITY
                } else {
                    OPEN_END_YEARS
                };
                (x, end.max(x))
            } else if high_bound {
                (if x <= 19.0 { 0.0 } else { 19.0 }, x)
            } else {
                // A point, widened by a following standard deviation ("62 ± 8").
                let sd = match (tokens.get(after), tokens.get(after + 1)) {
                    (Some(Token::Sym('±')), Some(Token::Num(s))) => Some(*s),
                    _ => match (tokens.get(i + 1), tokens.get(i + 2)) {
                        (Some(Token::Sym('±')), Some(Token::Num(s))) => Some(*s),
                        _ => None,
                    },
                };
                let of_a_group = (1..=5)
                    .any(|k| before(k).is_some_and(|t| t.is_any(&["mean", "median", "average"])));
                match sd {
                    Some(s) => (x - s * u, x + s * u),
                    // A group's mean or median: its ages spread around it.
                    None if of_a_group => (x - MEAN_SPREAD_YEARS * u, x + MEAN_SPREAD_YEARS * u),
                    None => (x, x),
                }
            }
        };
        if lo.is_finite() && lo >= 0.0 && lo <= hi && lo <= 120.0 {
            out.push((lo, hi.min(120.0)));
        }
        i = after.max(i + 1);
    }
    out
}

/// Indices into [`AGE_GROUPS`] of the groups that overlap `[lo, hi]`.
pub(crate) fn groups_overlapping(lo: f64, hi: f64) -> impl Iterator<Item = usize> {
    AGE_GROUPS
        .iter()
        .enumerate()
        .filter(move |(_, (_, glo, ghi))| *glo <= hi && lo < *ghi)
        .map(|(k, _)| k)
}

#[cfg(test)]
mod tests {
    use super::super::text::tokenize;
    use super::*;

    fn groups(text: &str) -> Vec<&'static str> {
        let mut ks: Vec<usize> = age_intervals(&tokenize(text))
            .into_iter()
            .flat_map(|(lo, hi)| groups_overlapping(lo, hi))
            .collect();
        ks.sort_unstable();
        ks.dedup();
        ks.into_iter().map(|k| AGE_GROUPS[k].0).collect()
    }

    #[test]
    fn ranges_points_and_bounds() {
        assert_eq!(
            groups("574 adults aged between 18-65 years"),
            vec!["Adolescent", "Young Adult", "Adult", "Middle Aged", "Aged"]
        );
        assert_eq!(
            groups("The mean age was 62 years."),
            vec!["Middle Aged", "Aged"]
        );
        assert_eq!(groups("patients aged 50 years"), vec!["Middle Aged"]);
        assert_eq!(
            groups("mean age 62 ± 10 years"),
            vec!["Middle Aged", "Aged"]
        );
        assert_eq!(
            groups("adults aged>65 years unvaccinated"),
            vec!["Aged", "Aged, 80 and over"]
        );
        assert_eq!(
            groups("1002 respondents aged 18 years and over"),
            vec!["Adolescent", "Young Adult", "Adult", "Middle Aged", "Aged"]
        );
        assert_eq!(groups("a 45-year-old man"), vec!["Middle Aged"]);
        assert_eq!(groups("Eight infants aged 2 to 15 months"), vec!["Infant"]);
    }

    #[test]
    fn durations_and_tolerances_are_not_ages() {
        assert!(groups("admitted during a period of 6 years").is_empty());
        assert!(groups("age-matched (+/-5 y) subjects").is_empty());
        assert!(groups("followed for 5 years").is_empty());
    }
}
