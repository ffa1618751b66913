//! MeSH check tags and study-design headings inferred from the words of a text, the way
//! indexers assign them. Each rule is a table row: a heading and the lower-case phrases whose
//! presence signals it. The tables are the rules; the code only looks the phrases up.
//!
//! Precision of each row was measured on the even-numbered half of the shipped PubMedQA
//! corpus (`linking-quality --rules` prints it); rows whose phrases were right less than
//! about a third of the time were left out.

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

/// Study-design and analysis headings and the phrases that signal them.
pub(crate) const DESIGN_RULES: &[(&str, &[&str])] = &[
    (
        "Retrospective Studies",
        &["retrospective", "retrospectively", "chart review", "medical records"],
    ),
    (
        "Prospective Studies",
        &["prospective", "prospectively"],
    ),
    ("Cross-Sectional Studies", &["cross sectional"]),
    (
        "Follow-Up Studies",
        &["follow up", "followed up", "followup", "were followed"],
    ),
    ("Cohort Studies", &["cohort", "cohorts"]),
    ("Case-Control Studies", &["case control", "matched controls"]),
    ("Longitudinal Studies", &["longitudinal"]),
    (
        "Surveys and Questionnaires",
        &["questionnaire", "questionnaires", "survey", "surveys", "surveyed"],
    ),
    (
        "Predictive Value of Tests",
        &["predictive value", "predictive values", "ppv", "npv"],
    ),
    ("Risk Factors", &["risk factor", "risk factors"]),
    ("Risk Assessment", &["risk assessment", "risk stratification"]),
    ("Logistic Models", &["logistic regression", "logistic model"]),
    (
        "Multivariate Analysis",
        &["multivariate analysis", "multivariable analysis", "multivariate"],
    ),
    ("Prevalence", &["prevalence"]),
    ("Quality of Life", &["quality of life"]),
    (
        "Reproducibility of Results",
        &[
            "reproducibility",
            "interobserver",
            "intraobserver",
            "inter observer",
            "intra observer",
            "inter rater",
            "interrater",
            "reliability",
        ],
    ),
    ("Feasibility Studies", &["feasibility", "pilot study"]),
    ("Pilot Projects", &["pilot study", "pilot"]),
    ("Length of Stay", &["length of stay", "hospital stay"]),
    ("Postoperative Complications", &["postoperative complications"]),
    ("Survival Rate", &["survival rate", "survival rates"]),
    (
        "Treatment Outcome",
        &["treatment outcome", "treatment outcomes", "efficacy", "success rate"],
    ),
    ("Age Factors", &["age groups", "age group", "older age", "younger age"]),
    ("Sex Factors", &["sex differences", "gender differences"]),
];

/// Whether any of `phrases` occurs in `words`.
pub(crate) fn any_phrase(words: &[&str], phrases: &[&str]) -> bool {
    phrases.iter().any(|p| contains_phrase(words, p))
}

#[cfg(test)]
mod tests {
    use super::super::text::{tokenize, words};
    use super::*;

    #[test]
    fn phrases_are_found_across_hyphens() {
        let t = tokenize("A retrospective, cross-sectional study with follow-up.");
        let w = words(&t);
        let hits: Vec<&str> = DESIGN_RULES
            .iter()
            .filter(|(_, ps)| any_phrase(&w, ps))
            .map(|(h, _)| *h)
            .collect();
        assert_eq!(
            hits,
            vec![
                "Retrospective Studies",
                "Cross-Sectional Studies",
                "Follow-Up Studies"
            ]
        );
    }
}
