//! The synthetic events dataset behind the project's own MCP server: 2,000 fictional world
//! events generated in code from a fixed seed, so every build and every run sees the same
//! data without a data file.
//!
//! Each [`Event`] has an `id` (`evt-0001` ...), a `country`, an `event_type`, a
//! `conclusion`, a `year` (2000 to 2024), a `title`, a `summary` and a `url` under
//! `https://events.example/` (a reserved name: nothing is fetched).
//!
//! The distributions are skewed on purpose, so that questions have clear answers: a few
//! countries hold most events (the United States, India and China lead), each country has a
//! signature event type it sees three times as often (Japan: natural disasters, the United
//! States: cyber incidents, ...), conclusions depend on the event type (cyber incidents are
//! mostly contained, protests often escalate), and recent years hold more events than early
//! ones.
//!
//! ```
//! use graphkit_examples::mcp_research::dataset;
//!
//! let events = dataset::events();
//! assert_eq!(events.len(), dataset::EVENT_COUNT);
//! assert_eq!(events[0].id, "evt-0001");
//! assert!(events[0].url.starts_with("https://events.example/"));
//! ```

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Serialize;

use crate::shared::time::MONTHS;

/// How many events [`events`] holds.
pub const EVENT_COUNT: usize = 2_000;

/// The seed [`events`] is generated from. Changing it changes every event.
pub const SEED: u64 = 0x0c8f_e20b_1bf8_a9c4;

/// The first and last year an event can have.
pub const YEARS: std::ops::RangeInclusive<u16> = 2000..=2024;

/// One fictional event: what happened where, when, and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Event {
    /// `evt-0001` to `evt-2000`.
    pub id: String,
    /// The country's English name, e.g. `United States`.
    pub country: &'static str,
    /// One of [`EVENT_TYPES`], e.g. `natural_disaster`.
    pub event_type: &'static str,
    /// One of [`CONCLUSIONS`]: how the event ended (or stood when reported).
    pub conclusion: &'static str,
    /// The year it happened, within [`YEARS`].
    pub year: u16,
    /// A one-line headline.
    pub title: String,
    /// Two sentences: what happened and how it ended.
    pub summary: String,
    /// Where the (fictional) report lives: `https://events.example/YEAR/COUNTRY/ID`.
    pub url: String,
}

/// A field of [`Event`], as named in queries (`group_by`, filter keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// `id`
    Id,
    /// `country`
    Country,
    /// `event_type`
    EventType,
    /// `conclusion`
    Conclusion,
    /// `year`
    Year,
    /// `title`
    Title,
    /// `summary`
    Summary,
    /// `url`
    Url,
}

impl Field {
    /// Every field, in the order of [`Event`]'s members.
    pub(crate) const ALL: [Field; 8] = [
        Field::Id,
        Field::Country,
        Field::EventType,
        Field::Conclusion,
        Field::Year,
        Field::Title,
        Field::Summary,
        Field::Url,
    ];

    /// The fields with few distinct values, which make sense to group by.
    pub(crate) const GROUPABLE: [Field; 4] = [
        Field::Country,
        Field::EventType,
        Field::Conclusion,
        Field::Year,
    ];

    /// The field's name as in the JSON of an event.
    pub fn name(self) -> &'static str {
        match self {
            Field::Id => "id",
            Field::Country => "country",
            Field::EventType => "event_type",
            Field::Conclusion => "conclusion",
            Field::Year => "year",
            Field::Title => "title",
            Field::Summary => "summary",
            Field::Url => "url",
        }
    }

    /// The field named `name` (exact, lower case), if any.
    pub(crate) fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|field| field.name() == name)
    }
}

impl std::fmt::Display for Field {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Event {
    /// The value of a text field; `None` for [`Field::Year`], the only number.
    pub fn text(&self, field: Field) -> Option<&str> {
        Some(match field {
            Field::Id => &self.id,
            Field::Country => self.country,
            Field::EventType => self.event_type,
            Field::Conclusion => self.conclusion,
            Field::Title => &self.title,
            Field::Summary => &self.summary,
            Field::Url => &self.url,
            Field::Year => return None,
        })
    }
}

/// The event types, as they appear in [`Event::event_type`].
pub const EVENT_TYPES: [&str; 10] = [
    "protest",
    "election",
    "natural_disaster",
    "cyber_incident",
    "industrial_accident",
    "public_health_alert",
    "infrastructure_failure",
    "trade_agreement",
    "diplomatic_summit",
    "financial_fraud",
];

/// The conclusions, as they appear in [`Event::conclusion`].
pub const CONCLUSIONS: [&str; 6] = [
    "resolved",
    "contained",
    "ongoing",
    "escalated",
    "inconclusive",
    "under_investigation",
];

/// The 2,000 events of the project's dataset, in id order (generated once, on first use).
pub fn events() -> &'static [Event] {
    static EVENTS: OnceLock<Vec<Event>> = OnceLock::new();
    EVENTS.get_or_init(|| generate(SEED, EVENT_COUNT))
}

/// Generates `count` events from `seed`: the same arguments give the same events on every
/// platform (the generator is a fixed SplitMix64, not a library RNG whose algorithm may
/// change).
pub fn generate(seed: u64, count: usize) -> Vec<Event> {
    let mut rng = SplitMix64(seed);
    let country_weights: Vec<u32> = COUNTRIES.iter().map(|c| c.weight).collect();
    let year_weights: Vec<u32> = YEARS
        .map(|year| 4 + u32::from(year - YEARS.start()))
        .collect();
    let width = count.max(1).to_string().len().max(4);
    (1..=count)
        .map(|number| {
            let id = format!("evt-{number:0width$}");
            let country = &COUNTRIES[rng.pick(&country_weights)];
            let type_weights: Vec<u32> = EVENT_KINDS
                .iter()
                .map(|kind| {
                    if kind.name == country.signature {
                        kind.weight * 3
                    } else {
                        kind.weight
                    }
                })
                .collect();
            let kind = &EVENT_KINDS[rng.pick(&type_weights)];
            let conclusion = CONCLUSIONS[rng.pick(&kind.conclusions)];
            let year = YEARS.start() + u16::try_from(rng.pick(&year_weights)).unwrap_or(0);
            let city = country.cities[rng.below(country.cities.len())];
            let headline = kind.headlines[rng.below(kind.headlines.len())];
            let scale = kind.scale[rng.below(kind.scale.len())];
            let size = kind.unit * (1 + rng.below(400));
            let days = 2 + rng.below(60);
            let month = MONTHS[rng.below(MONTHS.len())];
            let title = format!("{headline} in {city}");
            let impact = scale.replace("{n}", &group_digits(size));
            let ending = ending(conclusion, days);
            let summary = format!(
                "{headline} in {city}, {}, in {month} {year} {impact}. {ending}",
                country.name
            );
            let url = format!("https://events.example/{year}/{}/{id}", slug(country.name));
            Event {
                id,
                country: country.name,
                event_type: kind.name,
                conclusion,
                year,
                title,
                summary,
                url,
            }
        })
        .collect()
}

/// The sentence that tells how an event ended.
fn ending(conclusion: &str, days: usize) -> String {
    match conclusion {
        "resolved" => format!("Authorities declared the matter resolved after {days} days."),
        "contained" => format!(
            "Officials said it was contained within {days} days, with follow-up measures planned."
        ),
        "ongoing" => "The situation was still developing when this report was filed.".to_owned(),
        "escalated" => {
            format!("It escalated over the following {days} days and drew national attention.")
        }
        "inconclusive" => "A review found no clear cause or outcome.".to_owned(),
        _ => "An official investigation was opened and has not yet reported.".to_owned(),
    }
}

/// `12345` → `12,345`.
fn group_digits(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `United States` → `united-states`.
fn slug(name: &str) -> String {
    name.to_ascii_lowercase().replace(' ', "-")
}

/// SplitMix64 (Steele, Lea, Flood 2014): a tiny generator whose output is fixed by its
/// definition, which is all a reproducible synthetic dataset needs.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`); the modulo bias is negligible for the small `n` here.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// An index into `weights`, chosen with probability proportional to its weight.
    fn pick(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        let mut roll = self.next() % total.max(1);
        for (index, &weight) in weights.iter().enumerate() {
            if roll < u64::from(weight) {
                return index;
            }
            roll -= u64::from(weight);
        }
        weights.len().saturating_sub(1)
    }
}

/// A country: its relative frequency, some cities, and the event type it sees most.
struct Country {
    name: &'static str,
    weight: u32,
    cities: &'static [&'static str],
    signature: &'static str,
}

const fn country(
    name: &'static str,
    weight: u32,
    signature: &'static str,
    cities: &'static [&'static str],
) -> Country {
    Country {
        name,
        weight,
        cities,
        signature,
    }
}

const COUNTRIES: [Country; 28] = [
    country(
        "United States",
        260,
        "cyber_incident",
        &["Chicago", "Houston", "Seattle", "Atlanta"],
    ),
    country(
        "India",
        190,
        "public_health_alert",
        &["Mumbai", "Chennai", "Kolkata", "Pune"],
    ),
    country(
        "China",
        150,
        "industrial_accident",
        &["Shenzhen", "Wuhan", "Chengdu", "Tianjin"],
    ),
    country(
        "Brazil",
        120,
        "protest",
        &["Sao Paulo", "Recife", "Porto Alegre"],
    ),
    country(
        "Germany",
        100,
        "trade_agreement",
        &["Hamburg", "Leipzig", "Cologne"],
    ),
    country(
        "France",
        90,
        "protest",
        &["Lyon", "Marseille", "Lille", "Nantes"],
    ),
    country(
        "United Kingdom",
        85,
        "financial_fraud",
        &["Manchester", "Glasgow", "Bristol"],
    ),
    country("Nigeria", 75, "election", &["Lagos", "Kano", "Ibadan"]),
    country(
        "Mexico",
        70,
        "infrastructure_failure",
        &["Guadalajara", "Monterrey", "Puebla"],
    ),
    country(
        "Japan",
        60,
        "natural_disaster",
        &["Osaka", "Sendai", "Fukuoka"],
    ),
    country(
        "Indonesia",
        55,
        "natural_disaster",
        &["Surabaya", "Medan", "Makassar"],
    ),
    country("Kenya", 45, "election", &["Nairobi", "Mombasa", "Kisumu"]),
    country(
        "Australia",
        40,
        "natural_disaster",
        &["Brisbane", "Perth", "Adelaide"],
    ),
    country(
        "Canada",
        38,
        "trade_agreement",
        &["Toronto", "Calgary", "Halifax"],
    ),
    country(
        "Egypt",
        35,
        "diplomatic_summit",
        &["Alexandria", "Giza", "Aswan"],
    ),
    country(
        "Philippines",
        32,
        "natural_disaster",
        &["Cebu", "Davao", "Iloilo"],
    ),
    country(
        "Colombia",
        30,
        "protest",
        &["Medellin", "Cali", "Barranquilla"],
    ),
    country(
        "Turkey",
        28,
        "natural_disaster",
        &["Izmir", "Bursa", "Antalya"],
    ),
    country(
        "South Africa",
        26,
        "infrastructure_failure",
        &["Durban", "Cape Town", "Pretoria"],
    ),
    country("Poland", 24, "election", &["Krakow", "Gdansk", "Wroclaw"]),
    country(
        "Argentina",
        22,
        "financial_fraud",
        &["Cordoba", "Rosario", "Mendoza"],
    ),
    country(
        "Vietnam",
        20,
        "industrial_accident",
        &["Hanoi", "Da Nang", "Hai Phong"],
    ),
    country(
        "Spain",
        18,
        "public_health_alert",
        &["Valencia", "Seville", "Bilbao"],
    ),
    country(
        "Italy",
        16,
        "infrastructure_failure",
        &["Milan", "Naples", "Turin"],
    ),
    country(
        "Chile",
        12,
        "natural_disaster",
        &["Valparaiso", "Concepcion"],
    ),
    country("Norway", 8, "diplomatic_summit", &["Bergen", "Trondheim"]),
    country(
        "New Zealand",
        6,
        "natural_disaster",
        &["Christchurch", "Wellington"],
    ),
    country("Iceland", 3, "natural_disaster", &["Akureyri", "Reykjavik"]),
];

/// An event type: its relative frequency, headlines, an impact phrase (`{n}` is a number)
/// and the weights of [`CONCLUSIONS`] for it.
struct EventKind {
    name: &'static str,
    weight: u32,
    headlines: &'static [&'static str],
    scale: &'static [&'static str],
    /// `{n}` is this times a number from 1 to 400.
    unit: usize,
    conclusions: [u32; 6],
}

// Conclusion weights, in the order of CONCLUSIONS:
// resolved, contained, ongoing, escalated, inconclusive, under_investigation.
const EVENT_KINDS: [EventKind; 10] = [
    EventKind {
        name: "protest",
        weight: 16,
        headlines: &[
            "Mass protest",
            "Labour strike march",
            "Student demonstration",
            "Farmers' blockade",
        ],
        scale: &[
            "that drew about {n} people",
            "with an estimated {n} participants",
        ],
        unit: 50,
        conclusions: [30, 10, 15, 30, 10, 5],
    },
    EventKind {
        name: "election",
        weight: 8,
        headlines: &[
            "Disputed regional election",
            "Snap general election",
            "Municipal election recount",
        ],
        scale: &[
            "with about {n} ballots contested",
            "where turnout shifted by {n} votes in key districts",
        ],
        unit: 25,
        conclusions: [55, 0, 10, 10, 15, 10],
    },
    EventKind {
        name: "natural_disaster",
        weight: 14,
        headlines: &[
            "Flash flooding",
            "Earthquake",
            "Wildfire",
            "Cyclone landfall",
            "Landslide",
        ],
        scale: &[
            "that displaced about {n} residents",
            "affecting an estimated {n} homes",
        ],
        unit: 20,
        conclusions: [25, 35, 25, 5, 5, 5],
    },
    EventKind {
        name: "cyber_incident",
        weight: 12,
        headlines: &[
            "Ransomware attack on hospitals",
            "Data breach at a payment processor",
            "Outage after an intrusion at a utility",
        ],
        scale: &[
            "exposing about {n} customer records",
            "disrupting services for {n} users",
        ],
        unit: 500,
        conclusions: [15, 45, 10, 5, 5, 20],
    },
    EventKind {
        name: "industrial_accident",
        weight: 10,
        headlines: &[
            "Chemical plant explosion",
            "Factory fire",
            "Mine collapse",
            "Port warehouse blast",
        ],
        scale: &[
            "forcing about {n} workers to evacuate",
            "with {n} people treated for exposure",
        ],
        unit: 2,
        conclusions: [20, 35, 5, 5, 10, 25],
    },
    EventKind {
        name: "public_health_alert",
        weight: 9,
        headlines: &[
            "Cholera outbreak",
            "Dengue surge",
            "Contaminated water alert",
            "Measles cluster",
        ],
        scale: &[
            "with about {n} confirmed cases",
            "prompting tests for {n} residents",
        ],
        unit: 5,
        conclusions: [20, 40, 20, 10, 5, 5],
    },
    EventKind {
        name: "infrastructure_failure",
        weight: 9,
        headlines: &[
            "Power grid blackout",
            "Bridge closure after structural failure",
            "Metro system shutdown",
            "Water main rupture",
        ],
        scale: &[
            "leaving about {n} households without service",
            "stranding an estimated {n} commuters",
        ],
        unit: 100,
        conclusions: [45, 20, 15, 5, 5, 10],
    },
    EventKind {
        name: "trade_agreement",
        weight: 6,
        headlines: &[
            "Bilateral trade deal",
            "Tariff reduction pact",
            "Regional customs agreement",
        ],
        scale: &[
            "covering about {n} product lines",
            "expected to affect {n} exporters",
        ],
        unit: 3,
        conclusions: [50, 0, 30, 5, 15, 0],
    },
    EventKind {
        name: "diplomatic_summit",
        weight: 5,
        headlines: &[
            "Regional security summit",
            "Climate finance talks",
            "Border negotiations",
        ],
        scale: &[
            "attended by {n} delegates",
            "with {n} officials in the delegations",
        ],
        unit: 1,
        conclusions: [40, 0, 25, 10, 25, 0],
    },
    EventKind {
        name: "financial_fraud",
        weight: 11,
        headlines: &[
            "Investment fraud scheme",
            "Bank accounting scandal",
            "Pension fund embezzlement",
        ],
        scale: &[
            "defrauding about {n} investors",
            "involving {n} shell accounts",
        ],
        unit: 10,
        conclusions: [15, 5, 15, 10, 10, 45],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_events_and_another_seed_does_not() {
        assert_eq!(generate(7, 50), generate(7, 50));
        assert_ne!(generate(7, 50), generate(8, 50));
    }

    #[test]
    fn every_country_kind_and_conclusion_table_is_consistent() {
        for country in &COUNTRIES {
            assert!(
                EVENT_TYPES.contains(&country.signature),
                "{}: {}",
                country.name,
                country.signature
            );
            assert!(!country.cities.is_empty());
        }
        let kinds: Vec<&str> = EVENT_KINDS.iter().map(|k| k.name).collect();
        assert_eq!(kinds, EVENT_TYPES);
        for kind in &EVENT_KINDS {
            assert!(kind.conclusions.iter().sum::<u32>() > 0, "{}", kind.name);
        }
    }

    #[test]
    fn digits_are_grouped_by_thousands() {
        assert_eq!(group_digits(50), "50");
        assert_eq!(group_digits(1_000), "1,000");
        assert_eq!(group_digits(20_000), "20,000");
        assert_eq!(group_digits(1_234_567), "1,234,567");
    }

    #[test]
    fn field_names_round_trip() {
        for field in Field::ALL {
            assert_eq!(Field::from_name(field.name()), Some(field));
        }
        assert_eq!(Field::from_name("colour"), None);
    }
}
