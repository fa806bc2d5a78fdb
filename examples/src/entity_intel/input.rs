//! The workflow's input: research directions grouped in bundles (the output of the seed's
//! "Research Directions Node"), read from JSON with errors that name the bad field.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::shared::ExampleError;

/// Everything the research phase starts from: the episode, the bundles of research
/// directions, and (optionally) ranked candidate sources.
///
/// Print the JSON Schema with `graphkit-research entity-intel --print-input-schema`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntitiesResearchDirections {
    /// Episode metadata (id, title, URL, summary): passed through to the outputs.
    #[serde(default)]
    pub episode: Value,
    /// Ranked candidate sources per entity, from the candidate-sources step: shown to the
    /// agent as hints and passed through to the outputs.
    #[serde(default)]
    pub candidate_sources: Value,
    /// One bundle per guest: the guest and the businesses, products, compounds and
    /// platforms connected to them. Each bundle is researched by its own graph run.
    pub bundles: Vec<EntityBundle>,
    /// The number of directions over all bundles (the seed's `totalDirections`): checked
    /// when given, filled in otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_directions: Option<usize>,
}

/// The entities of one guest and their research directions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntityBundle {
    /// Stable id of the bundle, e.g. `guest_mara_lindqvist_001`: the first part of every
    /// todo id and the name of the bundle's output directory (`[a-z0-9_]`).
    pub bundle_id: String,
    /// The entities to research.
    #[serde(default)]
    pub entities: Vec<EntityDirections>,
    /// The seed's typed sub-bundle of the guest (`GuestDueDiligenceDirections`): a PERSON,
    /// researched first. Moved into `entities` when the input is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<TypedEntityDirections>,
    /// The seed's `BusinessDueDiligenceDirections`: BUSINESS entities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub businesses: Vec<TypedEntityDirections>,
    /// The seed's `ProductResearchDirections`: PRODUCT entities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<TypedEntityDirections>,
    /// The seed's `CompoundNormalizationDirections`: COMPOUND entities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) compounds: Vec<TypedEntityDirections>,
    /// The seed's `PlatformResearchDirections`: PLATFORM entities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) platforms: Vec<TypedEntityDirections>,
}

/// An entity in one of the seed's typed sub-bundles: its kind comes from where it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypedEntityDirections {
    /// Canonical name (also accepted as `entityName` or `canonicalName`).
    #[serde(alias = "entityName", alias = "canonicalName")]
    pub name: String,
    /// Research directions for it.
    pub directions: Vec<ResearchDirection>,
}

impl EntityBundle {
    /// Moves the seed's typed sub-bundles into `entities` (the guest first, then
    /// businesses, products, compounds, platforms, then entities given directly).
    fn normalize(&mut self) {
        let typed = [
            (
                EntityType::Person,
                self.guest.take().into_iter().collect::<Vec<_>>(),
            ),
            (EntityType::Business, std::mem::take(&mut self.businesses)),
            (EntityType::Product, std::mem::take(&mut self.products)),
            (EntityType::Compound, std::mem::take(&mut self.compounds)),
            (EntityType::Platform, std::mem::take(&mut self.platforms)),
        ];
        let mut entities: Vec<EntityDirections> = typed
            .into_iter()
            .flat_map(|(entity_type, list)| {
                list.into_iter().map(move |e| EntityDirections {
                    entity_type,
                    name: e.name,
                    directions: e.directions,
                })
            })
            .collect();
        entities.append(&mut self.entities);
        self.entities = entities;
    }
}

/// One entity and what to find out about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntityDirections {
    /// What kind of entity it is.
    pub entity_type: EntityType,
    /// Canonical name, e.g. `Halvard Biosciences`.
    pub name: String,
    /// Research directions for it (the seed's 1-4 per entity).
    pub directions: Vec<ResearchDirection>,
}

/// The five entity kinds of the seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EntityType {
    /// A guest (a person).
    Person,
    /// A company.
    Business,
    /// A product sold by a business.
    Product,
    /// A chemical compound or ingredient.
    Compound,
    /// A technology platform.
    Platform,
}

impl EntityType {
    /// The short tag used in todo ids and file names (`guest`, `biz`, `prod`, `compound`,
    /// `platform`), as in the seed's examples.
    pub(crate) fn tag(self) -> &'static str {
        match self {
            Self::Person => "guest",
            Self::Business => "biz",
            Self::Product => "prod",
            Self::Compound => "compound",
            Self::Platform => "platform",
        }
    }

    /// The upper-case name (`PERSON`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Person => "PERSON",
            Self::Business => "BUSINESS",
            Self::Product => "PRODUCT",
            Self::Compound => "COMPOUND",
            Self::Platform => "PLATFORM",
        }
    }
}

/// How urgent a direction (and its todo) is.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Priority {
    /// Last.
    Low,
    /// The default.
    #[default]
    Medium,
    /// First.
    High,
}

/// One research direction: what to find, which fields to fill, and when it is done.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResearchDirection {
    /// camelCase key of the direction, e.g. `businessIdentityOverview`: the last part of
    /// the todo id.
    pub key: String,
    /// What to find out.
    pub objective: String,
    /// How urgent.
    #[serde(default)]
    pub priority: Priority,
    /// Fields the output must fill, e.g. `legalName`, `website`, `foundedYear`.
    #[serde(default)]
    pub(crate) fields_to_extract: Vec<String>,
    /// When the direction counts as done.
    #[serde(default)]
    pub(crate) acceptance_criteria: Vec<String>,
    /// Which sources to prefer, best first.
    #[serde(default)]
    pub(crate) source_priorities: Vec<String>,
    /// Optional directions may end blocked without failing the bundle.
    #[serde(default)]
    pub optional: bool,
}

impl EntitiesResearchDirections {
    /// Parses and validates research directions from JSON text.
    ///
    /// # Errors
    /// [`ExampleError::Input`] naming the JSON path of the first bad field
    /// (`bundles[1].entities[0].directions[2].priority: unknown variant ...`), or a
    /// semantic problem (empty bundle, duplicate ids, a bundle id that is not a slug).
    pub fn from_json(source: &str, text: &str) -> Result<Self, ExampleError> {
        if let Some(message) = not_an_object(text) {
            return Err(ExampleError::Input {
                origin: source.to_owned(),
                message,
            });
        }
        let de = &mut serde_json::Deserializer::from_str(text);
        let parsed: Self = serde_path_to_error::deserialize(de).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            let message = if path == "." {
                format!("{EXPECTED}: {inner}")
            } else {
                format!("field `{path}`: {inner}")
            };
            ExampleError::Input {
                origin: source.to_owned(),
                message,
            }
        })?;
        let mut parsed = parsed;
        for bundle in &mut parsed.bundles {
            bundle.normalize();
        }
        parsed.validate().map_err(|message| ExampleError::Input {
            origin: source.to_owned(),
            message,
        })?;
        Ok(parsed)
    }

    /// The largest input file read (16 MiB): a directions file is a few kilobytes.
    pub(crate) const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

    /// Reads and parses a directions file of at most [`MAX_FILE_BYTES`](Self::MAX_FILE_BYTES).
    ///
    /// # Errors
    /// As [`from_json`](Self::from_json), [`ExampleError::Input`] for a file above the
    /// limit, or [`ExampleError::Io`] when the file cannot be read.
    pub fn from_file(path: &Path) -> Result<Self, ExampleError> {
        use std::io::Read;
        let file = std::fs::File::open(path).map_err(|e| ExampleError::io("read", path, e))?;
        // Read through a limit: the size on disk says nothing for /dev/zero or a pipe.
        let mut bytes = Vec::new();
        file.take(Self::MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ExampleError::io("read", path, e))?;
        if bytes.len() as u64 > Self::MAX_FILE_BYTES {
            return Err(ExampleError::Input {
                origin: path.display().to_string(),
                message: format!(
                    "the file is larger than {} MiB; a directions file is a JSON object with `bundles`, usually a few kilobytes",
                    Self::MAX_FILE_BYTES / (1024 * 1024)
                ),
            });
        }
        let text = String::from_utf8(bytes).map_err(|e| ExampleError::Input {
            origin: path.display().to_string(),
            message: format!("the file is not UTF-8 text ({e})"),
        })?;
        Self::from_json(&path.display().to_string(), &text)
    }

    /// The JSON Schema of the input, pretty-printed.
    pub(crate) fn schema_json() -> String {
        let schema = schemars::schema_for!(EntitiesResearchDirections);
        serde_json::to_string_pretty(&schema).unwrap_or_else(|e| format!("(schema error: {e})"))
    }

    /// The number of directions over all bundles.
    pub fn total_directions(&self) -> usize {
        self.bundles
            .iter()
            .map(EntityBundle::total_directions)
            .sum()
    }

    /// This input reduced to one bundle (what each graph run gets, as in the seed).
    pub fn single_bundle(&self, bundle: &EntityBundle) -> Self {
        Self {
            episode: self.episode.clone(),
            candidate_sources: self.candidate_sources.clone(),
            bundles: vec![bundle.clone()],
            total_directions: Some(bundle.total_directions()),
        }
    }

    fn validate(&self) -> Result<(), String> {
        if self.bundles.is_empty() {
            return Err("field `bundles`: give at least one bundle".into());
        }
        let counted: usize = self
            .bundles
            .iter()
            .map(EntityBundle::total_directions)
            .sum();
        if let Some(given) = self.total_directions.filter(|n| *n != counted) {
            return Err(format!(
                "field `totalDirections`: says {given}, but the bundles hold {counted} directions; fix it or leave it out"
            ));
        }
        let mut ids = std::collections::HashSet::new();
        for (b, bundle) in self.bundles.iter().enumerate() {
            let at = format!("bundles[{b}]");
            if bundle.bundle_id.is_empty()
                || !bundle
                    .bundle_id
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            {
                return Err(format!(
                    "field `{at}.bundleId`: {:?} must be a non-empty slug of a-z, 0-9 and _ (it names a directory)",
                    bundle.bundle_id
                ));
            }
            if !ids.insert(bundle.bundle_id.clone()) {
                return Err(format!(
                    "field `{at}.bundleId`: {:?} is used by two bundles",
                    bundle.bundle_id
                ));
            }
            if bundle.entities.is_empty() {
                return Err(format!(
                    "field `{at}.entities`: a bundle needs at least one entity (in `entities`, or the seed's `guest`, `businesses`, `products`, `compounds`, `platforms`)"
                ));
            }
            let mut todo_ids = std::collections::HashSet::new();
            for (e, entity) in bundle.entities.iter().enumerate() {
                let at = format!("{at}.entities[{e}]");
                if slug(&entity.name).is_empty() {
                    return Err(format!(
                        "field `{at}.name`: the entity needs a name with letters or digits"
                    ));
                }
                if entity.directions.is_empty() {
                    return Err(format!(
                        "field `{at}.directions`: an entity needs at least one direction"
                    ));
                }
                for (d, direction) in entity.directions.iter().enumerate() {
                    let at = format!("{at}.directions[{d}]");
                    if direction.key.is_empty()
                        || !direction.key.chars().all(|c| c.is_ascii_alphanumeric())
                    {
                        return Err(format!(
                            "field `{at}.key`: {:?} must be a non-empty camelCase word",
                            direction.key
                        ));
                    }
                    if direction.objective.trim().is_empty() {
                        return Err(format!("field `{at}.objective`: say what to find out"));
                    }
                    if !todo_ids.insert(todo_id(&bundle.bundle_id, entity, direction)) {
                        return Err(format!(
                            "field `{at}.key`: {:?} repeats a direction of the same entity",
                            direction.key
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

impl EntityBundle {
    /// The number of directions in the bundle.
    pub fn total_directions(&self) -> usize {
        self.entities.iter().map(|e| e.directions.len()).sum()
    }
}

/// Lower-case ASCII slug with `_` separators: `Halvard Biosciences` → `halvard_biosciences`.
pub(crate) fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    out.trim_end_matches('_').to_owned()
}

/// The seed's todo id, as in its examples:
///
/// - the bundle's guest (a PERSON whose name is in the bundle id):
///   `{bundleId}_{directionKey}` — `guest_ilan_sobel_001_roleAffiliationConfirmation`;
/// - any other entity: `{bundleId}_{entityType}_{entitySlug}_{directionKey}` —
///   `guest_ilan_sobel_001_biz_bioharvest_businessIdentityOverview`,
///   `guest_ilan_sobel_001_prod_vinia_productCanonicalIdentity` (another person:
///   `..._person_{slug}_...`).
pub fn todo_id(
    bundle_id: &str,
    entity: &EntityDirections,
    direction: &ResearchDirection,
) -> String {
    let name = slug(&entity.name);
    if entity.entity_type == EntityType::Person && bundle_id.contains(&name) {
        return format!("{bundle_id}_{}", direction.key);
    }
    let tag = match entity.entity_type {
        EntityType::Person => "person",
        other => other.tag(),
    };
    format!("{bundle_id}_{tag}_{name}_{}", direction.key)
}

/// The suggested output file of a todo, as in the seed's "Output Structure":
/// `{entityType}_{entitySlug}_{directionKey}.json`.
pub(crate) fn output_file(entity: &EntityDirections, direction: &ResearchDirection) -> String {
    format!(
        "{}_{}_{}.json",
        entity.entity_type.tag(),
        slug(&entity.name),
        direction.key
    )
}

/// What the input must be, for messages.
const EXPECTED: &str = "expected an object with `bundles` (a list of entity bundles; `--print-input-schema` shows the format)";

/// What is wrong with an input that is not a JSON object at all, said in terms of what was
/// expected rather than serde's internals; `None` for an object.
fn not_an_object(text: &str) -> Option<String> {
    let found = match serde_json::from_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Object(_)) => return None,
        Ok(serde_json::Value::Array(_)) => "a list",
        Ok(serde_json::Value::String(_)) => "a string",
        Ok(serde_json::Value::Number(_)) => "a number",
        Ok(serde_json::Value::Bool(_)) => "a boolean",
        Ok(serde_json::Value::Null) => "null",
        Err(e) if e.is_eof() => {
            return Some(format!(
                "the JSON ends too early (line {}, column {}); {EXPECTED}",
                e.line(),
                e.column()
            ));
        }
        Err(e) => return Some(format!("not valid JSON ({e}); {EXPECTED}")),
    };
    Some(format!("{EXPECTED}, found {found}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn todo_ids_follow_the_seeds_examples() {
        let direction = |key: &str| ResearchDirection {
            key: key.into(),
            objective: "x".into(),
            priority: Priority::High,
            fields_to_extract: vec![],
            acceptance_criteria: vec![],
            source_priorities: vec![],
            optional: false,
        };
        let entity = |entity_type, name: &str| EntityDirections {
            entity_type,
            name: name.into(),
            directions: vec![],
        };
        let bundle = "guest_ilan_sobel_001";
        let cases = [
            (
                EntityType::Person,
                "Ilan Sobel",
                "roleAffiliationConfirmation",
                "guest_ilan_sobel_001_roleAffiliationConfirmation",
            ),
            (
                EntityType::Business,
                "BioHarvest",
                "businessIdentityOverview",
                "guest_ilan_sobel_001_biz_bioharvest_businessIdentityOverview",
            ),
            (
                EntityType::Product,
                "Vinia",
                "productCanonicalIdentity",
                "guest_ilan_sobel_001_prod_vinia_productCanonicalIdentity",
            ),
            (
                EntityType::Person,
                "Dana Roe",
                "professionalBackground",
                "guest_ilan_sobel_001_person_dana_roe_professionalBackground",
            ),
        ];
        for (kind, name, key, expected) in cases {
            assert_eq!(
                todo_id(bundle, &entity(kind, name), &direction(key)),
                expected
            );
        }
    }

    #[test]
    fn slug_keeps_letters_and_digits_only() {
        assert_eq!(slug("Halvard Biosciences, Inc."), "halvard_biosciences_inc");
        assert_eq!(slug("  NX-7 "), "nx_7");
    }

    #[test]
    fn unknown_priority_names_the_field_path() {
        let text = r#"{"bundles":[{"bundleId":"b1","entities":[{"entityType":"BUSINESS","name":"Acme",
            "directions":[{"key":"identity","objective":"x","priority":"URGENT"}]}]}]}"#;
        let err = EntitiesResearchDirections::from_json("input.json", text)
            .expect_err("bad priority")
            .to_string();
        assert!(
            err.contains("bundles[0].entities[0].directions[0].priority"),
            "{err}"
        );
        assert!(err.contains("input.json"), "{err}");
    }
}
