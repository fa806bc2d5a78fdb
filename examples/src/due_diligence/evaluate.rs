//! `--evaluate`: runs the fictional personas and measures entity and red-flag recall
//! against their expected lists (the seed's persona recall tests).

use serde::Serialize;

use super::input::Persona;
use super::state::DueDiligenceState;

/// Recall of one persona's run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PersonaScore {
    /// The persona.
    pub id: String,
    /// Expected entities found (by name or alias).
    pub(crate) entities_found: Vec<String>,
    /// Expected entities missed.
    pub(crate) entities_missed: Vec<String>,
    /// Expected red flags found (key phrase in some red flag of the report).
    pub(crate) red_flags_found: Vec<String>,
    /// Expected red flags missed.
    pub(crate) red_flags_missed: Vec<String>,
}

impl PersonaScore {
    /// Entity recall, 0 to 1 (1 when nothing is expected).
    pub fn entity_recall(&self) -> f64 {
        ratio(self.entities_found.len(), self.entities_missed.len())
    }

    /// Red-flag recall, 0 to 1.
    pub fn red_flag_recall(&self) -> f64 {
        ratio(self.red_flags_found.len(), self.red_flags_missed.len())
    }
}

fn ratio(found: usize, missed: usize) -> f64 {
    if found + missed == 0 {
        1.0
    } else {
        found as f64 / (found + missed) as f64
    }
}

/// Scores a finished investigation against a persona.
pub fn score(persona: &Persona, state: &DueDiligenceState) -> PersonaScore {
    let (entities_found, entities_missed) = persona
        .expected_entities
        .iter()
        .cloned()
        .partition(|name| state.discovered_entities.iter().any(|e| e.is_named(name)));
    let flags: Vec<String> = state
        .report
        .as_ref()
        .map(|r| {
            r.report
                .red_flags
                .iter()
                .map(|f| f.statement.to_lowercase())
                .collect()
        })
        .unwrap_or_default();
    let (red_flags_found, red_flags_missed) = persona
        .expected_red_flags
        .iter()
        .cloned()
        .partition(|phrase| flags.iter().any(|f| f.contains(&phrase.to_lowercase())));
    PersonaScore {
        id: persona.id.clone(),
        entities_found,
        entities_missed,
        red_flags_found,
        red_flags_missed,
    }
}

/// The scores as a table.
pub(crate) fn render(scores: &[PersonaScore]) -> String {
    let mut out = format!(
        "{:<14} {:>15} {:>16}  missed\n",
        "persona", "entity recall", "red-flag recall"
    );
    for s in scores {
        let missed: Vec<&str> = s
            .entities_missed
            .iter()
            .chain(&s.red_flags_missed)
            .map(String::as_str)
            .collect();
        out.push_str(&format!(
            "{:<14} {:>8.2} ({}/{}) {:>9.2} ({}/{})  {}\n",
            s.id,
            s.entity_recall(),
            s.entities_found.len(),
            s.entities_found.len() + s.entities_missed.len(),
            s.red_flag_recall(),
            s.red_flags_found.len(),
            s.red_flags_found.len() + s.red_flags_missed.len(),
            if missed.is_empty() {
                "-".to_owned()
            } else {
                missed.join("; ")
            }
        ));
    }
    out
}
