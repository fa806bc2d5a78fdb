//! The report file's metadata from the state, the fallback report, and the file's
//! self-contained HTML rendering (the file itself is [`DueDiligenceReportFile`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::report_file::{
    DueDiligenceReportFile, ModelsUsed, ReportMetadata, Statistics, UsageTotals,
};
use super::schemas::{
    ConnectionMappingOutput, DueDiligenceReport, Finding, Importance, Passage, RiskAssessment,
    RiskLevel, SourceEvidence,
};
use super::state::DueDiligenceState;
use crate::shared::time::{now_ms, rfc3339};

/// How many distinct sources about the subject the searches read (after the graph's
/// check that each is about the subject).
pub(crate) fn sources_read(state: &DueDiligenceState) -> usize {
    let mut urls: Vec<&str> = state
        .search_memory
        .iter()
        .filter_map(|s| s.output.as_ref())
        .flat_map(|o| o.sources.iter().map(|s| s.url.as_str()))
        .collect();
    urls.sort_unstable();
    urls.dedup();
    urls.len()
}

/// The graph's check on the report, whatever the model wrote: with no source about the
/// subject, the overall risk is [`RiskLevel::Insufficient`] (not "low": nothing found is
/// not evidence of no risk), and the summary and gaps say so first.
///
/// `searches` is how many searches ran: with none, the note says that nothing was searched
/// (the model gave no usable query, or the run's time budget ran out), not that nothing
/// was found.
pub(crate) fn mark_insufficient(report: &mut DueDiligenceReport, subject: &str, searches: u64) {
    let note = if searches == 0 {
        format!(
            "Insufficient information: no search about {subject} was made (the model gave no usable query, or the run's time budget ran out before one), so no risk can be assessed; the absence of red flags here is not evidence of low risk."
        )
    } else {
        format!(
            "Insufficient information: no source about {subject} was found, so no risk can be assessed; the absence of red flags here is not evidence of low risk."
        )
    };
    report.risk_assessment.overall_risk = RiskLevel::Insufficient;
    report.executive_summary = format!("{note} {}", report.executive_summary)
        .trim_end()
        .to_owned();
    report.information_gaps.insert(0, note);
}

/// The metadata of `state`'s report.
pub fn metadata(
    state: &DueDiligenceState,
    strategy: &str,
    search: &str,
    usage: UsageTotals,
) -> ReportMetadata {
    ReportMetadata {
        session_id: state.session_id.clone(),
        subject: state.subject.clone(),
        subject_context: state.subject_context.clone(),
        models: ModelsUsed {
            strategy: strategy.to_owned(),
            search: search.to_owned(),
        },
        depth_reached: state.current_depth,
        max_depth: state.max_depth,
        termination_reason: state.termination_reason,
        statistics: Statistics {
            iterations: state.iteration_count,
            queries: state.queries_executed.len(),
            searches: state.search_count,
            failed_searches: state
                .search_memory
                .iter()
                .filter(|s| s.error.is_some())
                .count(),
            entities: state.discovered_entities.len(),
            sources: sources_read(state),
            red_flags: state.risk_indicators.red_flags.len(),
            errors: state.error_count,
        },
        start_time: state.start_time.clone(),
        end_time: rfc3339(now_ms()),
        usage,
    }
}

/// The report written when the synthesis model fails: the gathered indicators and gaps,
/// without prose. Its executive summary says so.
pub(crate) fn fallback_report(state: &DueDiligenceState, error: &str) -> DueDiligenceReport {
    let finding = |i: &super::schemas::Indicator| Finding {
        statement: i.text.clone(),
        sources: if i.source.is_empty() {
            Vec::new()
        } else {
            vec![i.source.clone()]
        },
        ..Finding::default()
    };
    let indicators = &state.risk_indicators;
    DueDiligenceReport {
        executive_summary: format!(
            "The report could not be synthesized by the model ({error}). The sections below list the red flags, neutral and positive items gathered during the research, unedited."
        ),
        risk_assessment: RiskAssessment {
            overall_risk: if indicators.red_flags.is_empty() {
                RiskLevel::Low
            } else {
                RiskLevel::High
            },
            risks: Vec::new(),
        },
        red_flags: indicators.red_flags.iter().map(finding).collect(),
        mitigating_factors: indicators.positive.iter().map(finding).collect(),
        information_gaps: vec![
            "The report synthesis failed; every section needs an analyst's review.".into(),
        ],
        ..DueDiligenceReport::default()
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn risk_colour(level: RiskLevel) -> &'static str {
    match level {
        RiskLevel::Insufficient => "#616161",
        RiskLevel::Low => "#2e7d32",
        RiskLevel::Medium => "#f9a825",
        RiskLevel::High => "#e65100",
        RiskLevel::Critical => "#b71c1c",
    }
}

fn findings_html(out: &mut String, findings: &[Finding]) {
    if findings.is_empty() {
        out.push_str("<p class=\"none\">Nothing found.</p>");
        return;
    }
    out.push_str("<ul>");
    for f in findings {
        let _ = write!(out, "<li>{}", escape(&f.statement));
        for s in &f.sources {
            let _ = write!(out, " <span class=\"src\">[{}]</span>", escape(s));
        }
        passages_html(out, &f.passages);
        out.push_str("</li>");
    }
    out.push_str("</ul>");
}

fn passages_html(out: &mut String, passages: &[Passage]) {
    for p in passages {
        let _ = write!(
            out,
            "<blockquote class=\"src\">“{}” — {}</blockquote>",
            escape(&p.text),
            escape(&p.source)
        );
    }
}

/// The entities with the passages naming them, and the facts the sources disagree on.
fn entities_html(out: &mut String, report: &SourceEvidence) {
    if !report.entities.is_empty() {
        out.push_str("<h2>Entities and where they are named</h2><ul>");
        for e in &report.entities {
            let _ = write!(out, "<li>{} ({:?})", escape(&e.name), e.entity_type);
            passages_html(out, &e.passages);
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
    if !report.fact_conflicts.is_empty() {
        out.push_str("<h2>Sources that disagree</h2><ul>");
        for c in &report.fact_conflicts {
            let _ = write!(out, "<li>{}: {}", escape(&c.entity), escape(&c.fact));
            for v in &c.values {
                let _ = write!(out, " <b>{}</b>", escape(&v.value));
                passages_html(out, std::slice::from_ref(&v.passage));
            }
            out.push_str("</li>");
        }
        out.push_str("</ul>");
    }
}

/// The entity graph as an inline SVG: nodes on a circle, coloured by importance, edges
/// as lines labelled with the relationship.
fn graph_svg(graph: &ConnectionMappingOutput) -> String {
    let n = graph.nodes.len().max(1);
    let (cx, cy, r) = (450.0_f64, 300.0_f64, 220.0_f64);
    let position: BTreeMap<&str, (f64, f64)> = graph
        .nodes
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let angle = std::f64::consts::TAU * i as f64 / n as f64 - std::f64::consts::FRAC_PI_2;
            (
                node.id.as_str(),
                (cx + r * angle.cos(), cy + r * angle.sin()),
            )
        })
        .collect();
    let mut svg = String::from(
        "<svg viewBox=\"0 0 900 600\" width=\"100%\" role=\"img\" aria-label=\"entity graph\">",
    );
    for edge in &graph.edges {
        let (Some(a), Some(b)) = (
            position.get(edge.source.as_str()),
            position.get(edge.target.as_str()),
        ) else {
            continue;
        };
        let _ = write!(
            svg,
            "<line x1=\"{:.0}\" y1=\"{:.0}\" x2=\"{:.0}\" y2=\"{:.0}\" stroke=\"#90a4ae\"/><text x=\"{:.0}\" y=\"{:.0}\" class=\"edge\">{}</text>",
            a.0,
            a.1,
            b.0,
            b.1,
            (a.0 + b.0) / 2.0,
            (a.1 + b.1) / 2.0,
            escape(&edge.relationship)
        );
    }
    for node in &graph.nodes {
        let Some((x, y)) = position.get(node.id.as_str()) else {
            continue;
        };
        let (fill, radius) = match node.importance {
            Importance::High => ("#e65100", 14),
            Importance::Medium => ("#f9a825", 11),
            Importance::Low => ("#78909c", 8),
        };
        let _ = write!(
            svg,
            "<circle cx=\"{x:.0}\" cy=\"{y:.0}\" r=\"{radius}\" fill=\"{fill}\"><title>{}</title></circle><text x=\"{:.0}\" y=\"{:.0}\" class=\"node\">{}</text>",
            escape(&node.importance_reasoning),
            x + 16.0,
            y + 4.0,
            escape(&node.name)
        );
    }
    svg.push_str("</svg>");
    svg
}

/// The report as one self-contained HTML page (inline CSS and SVG, no script, no network):
/// the risk level and the entity graph at the top, then the 18 sections and the metadata.
pub(crate) fn render_html(
    file: &DueDiligenceReportFile,
    graph: &ConnectionMappingOutput,
) -> String {
    let report = &file.report;
    let meta = &file.metadata;
    let level = report.risk_assessment.overall_risk;
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Due diligence: {subject}</title><style>\
body{{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222}}\
.risk{{display:inline-block;padding:.4em 1em;border-radius:6px;color:#fff;font-weight:bold;font-size:1.3em}}\
.src{{color:#607d8b;font-size:.85em}} .none{{color:#888}} .node{{font-size:12px}} .edge{{font-size:10px;fill:#607d8b}}\
table{{border-collapse:collapse}} td,th{{border:1px solid #ccc;padding:.3em .6em;text-align:left}}\
</style></head><body><h1>Enhanced due diligence: {subject}</h1>\
<p><span class=\"risk\" style=\"background:{colour}\">Overall risk: {level}</span> \
&nbsp;{flags} red flag(s), {entities} entities, depth {depth}/{max}, stopped by {reason}</p>",
        subject = escape(&meta.subject),
        colour = risk_colour(level),
        level = format!("{level:?}").to_uppercase(),
        flags = report.red_flags.len(),
        entities = meta.statistics.entities,
        depth = meta.depth_reached,
        max = meta.max_depth,
        reason = meta
            .termination_reason
            .map_or("-".to_owned(), |r| r.to_string()),
    );
    out.push_str("<h2>Entity graph</h2>");
    out.push_str(&graph_svg(graph));
    let _ = write!(
        out,
        "<h2>1. Executive summary</h2><p>{}</p>",
        escape(&report.executive_summary)
    );
    let sections = [
        ("2. Subject overview", &report.subject_overview),
        ("4. Identity verification", &report.identity_verification),
        ("5. Professional history", &report.professional_history),
        ("6. Corporate affiliations", &report.corporate_affiliations),
        ("7. Financial profile", &report.financial_profile),
        ("8. Legal and regulatory", &report.legal_and_regulatory),
        (
            "9. Sanctions and PEP screening",
            &report.sanctions_and_pep_screening,
        ),
        ("10. Adverse media", &report.adverse_media),
        ("11. Key relationships", &report.key_relationships),
        ("12. Suspicious patterns", &report.suspicious_patterns),
    ];
    for (i, (title, section)) in sections.iter().enumerate() {
        let _ = write!(out, "<h2>{title}</h2><p>{}</p>", escape(&section.summary));
        findings_html(&mut out, &section.findings);
        if i == 0 {
            let _ = write!(
                out,
                "<h2>3. Scope and methodology</h2><p>{}</p>",
                escape(&report.scope_and_methodology)
            );
        }
    }
    out.push_str("<h2>13. Risk assessment</h2><table><tr><th>Category</th><th>Severity</th><th>Description</th><th>Evidence</th></tr>");
    for risk in &report.risk_assessment.risks {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{:?}</td><td>{}</td><td class=\"src\">{}</td></tr>",
            escape(&risk.category),
            risk.severity,
            escape(&risk.description),
            escape(&risk.evidence.join("; "))
        );
    }
    out.push_str("</table><h2>14. Red flags</h2>");
    findings_html(&mut out, &report.red_flags);
    out.push_str("<h2>15. Mitigating factors</h2>");
    findings_html(&mut out, &report.mitigating_factors);
    out.push_str("<h2>16. Evidence strength</h2><table><tr><th>Finding</th><th>Strength</th><th>Sources</th></tr>");
    for rating in &report.evidence_strength {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{:?}</td><td class=\"src\">{}</td></tr>",
            escape(&rating.finding),
            rating.strength,
            escape(&rating.sources.join("; "))
        );
    }
    out.push_str("</table>");
    for (title, items) in [
        ("17. Information gaps", &report.information_gaps),
        (
            "18. Recommendations and next steps",
            &report.recommendations_and_next_steps,
        ),
    ] {
        let _ = write!(out, "<h2>{title}</h2><ul>");
        for item in items {
            let _ = write!(out, "<li>{}</li>", escape(item));
        }
        out.push_str("</ul>");
    }
    entities_html(&mut out, &file.evidence);
    let _ = writeln!(
        out,
        "<h2>Metadata</h2><pre>{}</pre></body></html>",
        escape(&serde_json::to_string_pretty(meta).unwrap_or_default())
    );
    out
}
