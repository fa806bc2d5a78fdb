//! The graph's check of the report against the sources' text, whatever the model wrote:
//! each red flag and mitigating factor gets the passage of each of its sources that says
//! it, each entity the passage of each source that names it, and every fact stated next to
//! an entity's name (dates, places, amounts, stakes, owners, offices: see
//! [`super::facts`]) is compared across sources, so two sources that disagree are flagged
//! with both values and passages instead of one being chosen silently.

use std::collections::BTreeMap;

use super::facts::{StatedFact, stated_facts};
use super::schemas::{
    DueDiligenceReport, Entity, FactConflict, Finding, Passage, ReportedEntity, SourceEvidence,
    StatedValue,
};
use crate::shared::prose::{names_in_full, sentences, supporting_sentence};

/// The text of each source read, by URL.
pub(crate) type SourceTexts = BTreeMap<String, String>;

/// Every URL the report's findings and the entities cite, once each, in order.
pub(crate) fn cited_urls(report: &DueDiligenceReport, entities: &[Entity]) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    let findings = report.red_flags.iter().chain(&report.mitigating_factors);
    for url in findings
        .flat_map(|f| &f.sources)
        .chain(entities.iter().flat_map(|e| &e.sources))
    {
        if !url.is_empty() && !urls.contains(url) {
            urls.push(url.clone());
        }
    }
    urls
}

/// Fills in the passages of the report's red flags and mitigating factors from `texts`,
/// and returns the entities with their passages and the fact conflicts. A finding none of
/// whose sources says it keeps no passage and is counted.
pub(crate) fn attach(
    report: &mut DueDiligenceReport,
    entities: &[Entity],
    texts: &SourceTexts,
) -> SourceEvidence {
    let mut unsupported_findings = 0;
    for finding in report
        .red_flags
        .iter_mut()
        .chain(report.mitigating_factors.iter_mut())
    {
        finding.passages = passages_of(finding, texts);
        unsupported_findings += usize::from(finding.passages.is_empty());
    }
    let reported = entities
        .iter()
        .map(|e| ReportedEntity {
            name: e.name.clone(),
            entity_type: e.entity_type,
            passages: e
                .sources
                .iter()
                .filter_map(|url| {
                    let sentence = naming_sentence(texts.get(url)?, e, &e.description)?;
                    Some(Passage {
                        source: url.clone(),
                        text: sentence,
                    })
                })
                .collect(),
        })
        .collect();
    SourceEvidence {
        entities: reported,
        fact_conflicts: fact_conflicts(entities, texts),
        unsupported_findings,
    }
}

/// The passage of each of `finding`'s sources that says it.
fn passages_of(finding: &Finding, texts: &SourceTexts) -> Vec<Passage> {
    finding
        .sources
        .iter()
        .filter_map(|url| {
            let text = supporting_sentence(texts.get(url)?, &finding.statement)?;
            Some(Passage {
                source: url.clone(),
                text,
            })
        })
        .collect()
}

/// The sentence of `text` that names `entity` (or one of its aliases) in full and shares
/// the most words with `about`; the first naming sentence on a tie.
fn naming_sentence(text: &str, entity: &Entity, about: &str) -> Option<String> {
    let about = about.to_lowercase();
    let shared = |s: &str| {
        s.split_whitespace()
            .filter(|w| w.len() >= 4 && about.contains(&w.to_lowercase()))
            .count()
    };
    sentences(text)
        .into_iter()
        .filter(|s| {
            !s.starts_with('#')
                && std::iter::once(&entity.name)
                    .chain(&entity.aliases)
                    .any(|n| names_in_full(s, n))
        })
        .fold(None::<(usize, String)>, |best, s| {
            let n = shared(&s);
            match best {
                Some((m, _)) if m >= n => best,
                _ => Some((n, s)),
            }
        })
        .map(|(_, s)| s)
}

/// The facts the sources state next to each entity's name (dates, places, amounts, stakes,
/// owners, offices: see [`stated_facts`]), where two sources give values that do not agree.
fn fact_conflicts(entities: &[Entity], texts: &SourceTexts) -> Vec<FactConflict> {
    let names: Vec<&str> = entities
        .iter()
        .flat_map(|e| std::iter::once(&e.name).chain(&e.aliases))
        .map(String::as_str)
        .collect();
    let mut conflicts = Vec::new();
    for entity in entities {
        let others: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| !entity.is_named(n))
            .collect();
        // Per fact, in the order first stated: each source's first value with its passage.
        let mut stated: Vec<(String, Vec<(StatedFact, Passage)>)> = Vec::new();
        for url in &entity.sources {
            let Some(text) = texts.get(url) else { continue };
            for sentence in sentences(text) {
                let Some(name) = std::iter::once(&entity.name)
                    .chain(&entity.aliases)
                    .find(|n| names_in_full(&sentence, n))
                else {
                    continue;
                };
                for fact in stated_facts(&sentence, name, &others) {
                    let slot = match stated.iter().position(|(f, _)| *f == fact.fact) {
                        Some(i) => &mut stated[i].1,
                        None => {
                            stated.push((fact.fact.clone(), Vec::new()));
                            &mut stated.last_mut().expect("just pushed").1
                        }
                    };
                    if slot.iter().any(|(_, p)| p.source == *url) {
                        continue;
                    }
                    slot.push((
                        fact,
                        Passage {
                            source: url.clone(),
                            text: sentence.clone(),
                        },
                    ));
                }
            }
        }
        for (fact, values) in stated {
            let disagree = values
                .iter()
                .enumerate()
                .any(|(i, (a, _))| values[i + 1..].iter().any(|(b, _)| !a.agrees_with(b)));
            if disagree {
                conflicts.push(FactConflict {
                    entity: entity.name.clone(),
                    fact,
                    values: values
                        .into_iter()
                        .map(|(f, passage)| StatedValue {
                            value: f.value,
                            passage,
                        })
                        .collect(),
                });
            }
        }
    }
    conflicts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_sources_with_two_founding_years_are_a_conflict_with_both_passages() {
        let entity = Entity {
            name: "Orvane Freight Ltd".into(),
            sources: vec!["a".into(), "b".into(), "c".into()],
            ..Entity::default()
        };
        let texts: SourceTexts = [
            ("a", "Orvane Freight Ltd was founded in 1998."),
            ("b", "Records show Orvane Freight Ltd was founded in 2004."),
            ("c", "Orvane Freight Ltd, founded in 1998, grew."),
        ]
        .into_iter()
        .map(|(u, t)| (u.to_owned(), t.to_owned()))
        .collect();
        let conflicts = fact_conflicts(&[entity], &texts);
        assert_eq!(conflicts.len(), 1);
        let values: Vec<(&str, &str)> = conflicts[0]
            .values
            .iter()
            .map(|v| (v.value.as_str(), v.passage.source.as_str()))
            .collect();
        assert_eq!(values, [("1998", "a"), ("2004", "b"), ("1998", "c")]);
    }
}
