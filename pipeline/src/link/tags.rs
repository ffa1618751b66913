//! MeSH check tags and study-design headings inferred from the words of a text, the way
//! indexers assign them. Each rule is a table row: a heading and the lower-case phrases whose
//! presence signals it. The tables are the rules; the code only looks the phrases up.
//!
//! Precision of each row was measured on the even-numbered half of the shipped PubMedQA
//! corpus (`linking-quality --diagnose N` prints it); rows whose heading was right less than a
//! third of the time there were left out (*Follow-Up Studies* from "follow-up", *Cohort
//! Studies* from "cohort", *Time Factors*, *Multivariate Analysis*, *Logistic Models*,
//! *Reproducibility of Results*, *Risk Factors* from "predictor", *Survival Rate* from
//! "survival", *Proportional Hazards Models* from "hazard ratio"…).

#[cfg(test)]
use super::text::contains_phrase;

/// Words that show a study of people: the population of nearly every clinical abstract.
/// Indexers tag such articles *Humans*.
pub(crate) const HUMAN_WORDS: &[&str] = &[
    "patient",
    "patients",
    "people",
    "person",
    "persons",
    "subjects",
    "participants",
    "volunteers",
    "individuals",
    "respondents",
    "women",
    "woman",
    "men",
    "man",
    "girls",
    "boys",
    "children",
    "infants",
    "adults",
    "adolescents",
    "mothers",
    "physicians",
    "nurses",
    "surgeons",
    "doctors",
    "residents",
    "students",
    "clinicians",
    "pregnant",
    "human",
    "humans",
    "outpatients",
    "inpatients",
    "survivors",
    "veterans",
    "smokers",
    "child",
    "parents",
    "families",
    "athletes",
    "players",
    "workers",
    "employees",
    "population",
    "populations",
];

/// Words of animal studies → *Animals*.
pub(crate) const ANIMAL_WORDS: &[&str] = &[
    "animal",
    "animals",
    "rat",
    "rats",
    "mice",
    "mouse",
    "murine",
    "rodent",
    "rodents",
    "dog",
    "dogs",
    "canine",
    "pig",
    "pigs",
    "piglets",
    "swine",
    "porcine",
    "rabbit",
    "rabbits",
    "sheep",
    "ovine",
    "bovine",
    "cattle",
    "horses",
    "equine",
    "cats",
    "feline",
    "primates",
    "monkeys",
    "hamsters",
    "zebrafish",
];

/// Words naming women, or organs and conditions only women have → *Female*.
pub(crate) const FEMALE_WORDS: &[&str] = &[
    "women",
    "woman",
    "female",
    "females",
    "girl",
    "girls",
    "mother",
    "mothers",
    "maternal",
    "pregnant",
    "pregnancy",
    "pregnancies",
    "postpartum",
    "menopausal",
    "postmenopausal",
    "premenopausal",
    "ovarian",
    "uterine",
    "endometrial",
    "endometriosis",
    "gynecologic",
    "gynaecologic",
    "gynecological",
    "obstetric",
    "cesarean",
    "caesarean",
    "hysterectomy",
    "mammography",
    "preeclampsia",
    "breast cancer",
];

/// Words naming men, or organs and conditions only men have → *Male*.
pub(crate) const MALE_WORDS: &[&str] = &[
    "men",
    "man",
    "male",
    "males",
    "boy",
    "boys",
    "father",
    "fathers",
    "paternal",
    "prostate",
    "prostatic",
    "testicular",
    "erectile",
    "penile",
];

/// Words that say the study has both sexes → *Female* and *Male*.
pub(crate) const BOTH_SEXES_WORDS: &[&str] = &["sex", "sexes", "gender", "genders"];

/// Pregnancy words → *Pregnancy* (a check tag for studies of pregnant women).
pub(crate) const PREGNANCY_WORDS: &[&str] = &[
    "pregnant",
    "pregnancy",
    "pregnancies",
    "gestation",
    "gestational",
    "antenatal",
    "prenatal",
    "trimester",
    "obstetric",
];

/// A heading signalled by phrases: at least one of `any`, and (when `with` is not empty) also
/// at least one of `with`, anywhere in the document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PhraseRule {
    pub(crate) heading: &'static str,
    pub(crate) any: &'static [&'static str],
    pub(crate) with: &'static [&'static str],
}

const fn rule(heading: &'static str, any: &'static [&'static str]) -> PhraseRule {
    PhraseRule {
        heading,
        any,
        with: &[],
    }
}

/// Study-design, analysis and course-of-disease headings and the phrases that signal them.
pub(crate) const DESIGN_RULES: &[PhraseRule] = &[
    rule(
        "Retrospective Studies",
        &[
            "retrospective",
            "retrospectively",
            "chart review",
            "medical records",
        ],
    ),
    rule("Prospective Studies", &["prospective", "prospectively"]),
    rule("Cross-Sectional Studies", &["cross sectional"]),
    rule(
        "Case-Control Studies",
        &["case control", "matched controls", "controls matched"],
    ),
    rule("Longitudinal Studies", &["longitudinal"]),
    rule(
        "Surveys and Questionnaires",
        &[
            "questionnaire",
            "questionnaires",
            "survey",
            "surveys",
            "surveyed",
        ],
    ),
    PhraseRule {
        heading: "Sensitivity and Specificity",
        any: &["sensitivity"],
        with: &["specificity"],
    },
    rule(
        "Predictive Value of Tests",
        &["predictive value", "predictive values", "ppv", "npv"],
    ),
    rule(
        "Risk Factors",
        &[
            "risk factor",
            "risk factors",
            "independently associated",
            "independent predictor",
            "independent predictors",
        ],
    ),
    rule(
        "Risk Assessment",
        &["risk assessment", "risk stratification"],
    ),
    rule(
        "Prognosis",
        &[
            "prognosis",
            "prognostic",
            "predictors of survival",
            "predictors of outcome",
        ],
    ),
    rule("Prevalence", &["prevalence"]),
    rule("Quality of Life", &["quality of life"]),
    rule("Feasibility Studies", &["feasibility", "pilot study"]),
    PhraseRule {
        heading: "Postoperative Complications",
        any: &["complication", "complications"],
        with: &["postoperative", "postoperatively", "after surgery"],
    },
    rule(
        "Treatment Outcome",
        &[
            "treatment outcome",
            "treatment outcomes",
            "clinical outcome",
            "clinical outcomes",
            "functional outcome",
            "functional outcomes",
            "efficacy",
            "success rate",
        ],
    ),
    rule(
        "Survival Rate",
        &["survival rate", "survival rates", "overall survival"],
    ),
    rule(
        "Disease-Free Survival",
        &[
            "disease free survival",
            "recurrence free",
            "progression free",
            "event free",
        ],
    ),
    rule(
        "Proportional Hazards Models",
        &[
            "cox regression",
            "cox proportional",
            "proportional hazards",
            "cox model",
        ],
    ),
    rule(
        "Neoplasm Staging",
        &[
            "tnm",
            "staging",
            "stage i",
            "stage ii",
            "stage iii",
            "stage iv",
        ],
    ),
    rule("Acute Disease", &["acute"]),
    rule(
        "Age Factors",
        &["age groups", "age group", "older age", "younger age"],
    ),
];

/// Whether any of `phrases` occurs in `words` (the plain form of the document linker's
/// lookup, for the tests of the phrase lists).
#[cfg(test)]
pub(crate) fn any_phrase(words: &[&str], phrases: &[&str]) -> bool {
    phrases.iter().any(|p| contains_phrase(words, p))
}

#[cfg(test)]
mod tests {
    use super::super::text::{tokenize, words};
    use super::*;

    #[test]
    fn phrases_are_found_across_hyphens() {
        let t = tokenize("A retrospective, cross-sectional Questionnaire study.");
        let w = words(&t);
        let hits: Vec<&str> = DESIGN_RULES
            .iter()
            .filter(|r| any_phrase(&w, r.any))
            .map(|r| r.heading)
            .collect();
        assert_eq!(
            hits,
            vec![
                "Retrospective Studies",
                "Cross-Sectional Studies",
                "Surveys and Questionnaires"
            ]
        );
    }
}
