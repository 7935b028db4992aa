//! The library's form for the common keys of a network (issue 32): a
//! stage's rate, delay, jitter, loss and queue (with its AQM), set on the
//! stage itself or as a new `[[states]]` entry. `POST /api/form` takes the
//! text being edited and the form's fields and answers the edited text,
//! as `--set` edits it (squall_scenario::apply_overrides, so comments and
//! layout stay), with the stages it has and the command line's located
//! problems of the result; nothing is written (the editor saves).

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use toml_edit::{DocumentMut, InlineTable, Item, Table, Value};

use crate::error::ApiError;
use crate::library::Problem;
use crate::{AppState, JsonBody};

/// The keys the form sets, as a person types them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonKeys {
    /// "10 Mbit/s"
    #[serde(default)]
    rate: Option<String>,
    /// "20 ms"
    #[serde(default)]
    delay: Option<String>,
    /// Extra delay drawn uniformly from 0 to this ("5 ms").
    #[serde(default)]
    jitter: Option<String>,
    /// Packet loss, "1%".
    #[serde(default)]
    loss: Option<String>,
    /// Queue limit in packets.
    #[serde(default)]
    queue_packets: Option<u32>,
    /// "tail" or "head".
    #[serde(default)]
    drop: Option<String>,
    /// "none", "codel" or "pie" (their RFC defaults: RFC 8289, RFC 8033).
    #[serde(default)]
    aqm: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewState {
    name: String,
    /// "5 s"
    at: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormRequest {
    /// The network's text as it stands in the editor.
    text: String,
    /// Its file name, for the errors (networks/NAME.toml).
    #[serde(default)]
    name: Option<String>,
    /// The stage the keys are for (by name); none: only list the stages.
    #[serde(default)]
    stage: Option<String>,
    #[serde(default)]
    keys: CommonKeys,
    /// Set them in a new state entered at `at` instead of on the stage.
    #[serde(default)]
    state: Option<NewState>,
}

/// The form's fields as (stage key, TOML value) pairs; empty fields are
/// left alone.
fn stage_values(k: &CommonKeys) -> Result<Vec<(&'static str, Value)>, ApiError> {
    let text = |s: &Option<String>| s.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let mut out: Vec<(&'static str, Value)> = Vec::new();
    if let Some(r) = text(&k.rate) {
        out.push(("rate", r.into()));
    }
    if let Some(d) = text(&k.delay) {
        out.push(("delay", d.into()));
    }
    if let Some(j) = text(&k.jitter) {
        let mut t = InlineTable::new();
        t.insert("kind", "uniform".into());
        t.insert("low", "0 ms".into());
        t.insert("high", j.into());
        out.push(("jitter", Value::InlineTable(t)));
    }
    if let Some(l) = text(&k.loss) {
        let mut t = InlineTable::new();
        t.insert("packet", l.into());
        out.push(("error", Value::InlineTable(t)));
    }
    let aqm = text(&k.aqm).filter(|a| a != "none");
    if let Some(a) = &aqm
        && !matches!(a.as_str(), "codel" | "pie")
    {
        return Err(ApiError::bad_request(format!("aqm `{a}`: expected none, codel or pie")));
    }
    if k.queue_packets.is_some() || text(&k.drop).is_some() || aqm.is_some() {
        let mut t = InlineTable::new();
        if let Some(p) = k.queue_packets {
            t.insert("packets", i64::from(p).into());
        }
        if let Some(d) = text(&k.drop) {
            t.insert("drop", d.into());
        }
        if let Some(a) = aqm {
            t.insert(&a, Value::InlineTable(InlineTable::new()));
        }
        out.push(("queue", Value::InlineTable(t)));
    }
    Ok(out)
}

/// `text` with a `[[states]]` entry appended: `name`, `at`, and `set.STAGE`
/// holding `values`.
fn with_state(text: &str, state: &NewState, stage: &str, values: Vec<(&'static str, Value)>) -> Result<String, String> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| e.message().trim_end().to_string())?;
    let mut patch = InlineTable::new();
    for (k, v) in values {
        patch.insert(k, v);
    }
    let mut entry = Table::new();
    entry.insert("name", toml_edit::value(state.name.trim()));
    entry.insert("at", toml_edit::value(state.at.trim()));
    let mut set = InlineTable::new();
    set.insert(stage, Value::InlineTable(patch));
    entry.insert("set", toml_edit::value(set));
    match doc.entry("states").or_insert(Item::ArrayOfTables(Default::default())) {
        Item::ArrayOfTables(a) => a.push(entry),
        _ => return Err("`states` is not an array of tables ([[states]])".into()),
    }
    Ok(doc.to_string())
}

/// The stages of a network text, by name, in file order.
fn stage_names(text: &str) -> Vec<String> {
    let Ok(doc) = text.parse::<DocumentMut>() else { return Vec::new() };
    let mut names = Vec::new();
    let links = doc.get("links").and_then(Item::as_array_of_tables).into_iter().flatten();
    for link in links {
        for dir in ["downlink", "uplink"] {
            for stage in link.get(dir).and_then(Item::as_array_of_tables).into_iter().flatten() {
                if let Some(n) = stage.get("name").and_then(Item::as_str) {
                    names.push(n.to_string());
                }
            }
        }
    }
    names
}

pub async fn apply(
    State(app): State<Arc<AppState>>,
    JsonBody(r): JsonBody<FormRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let source = format!("networks/{}.toml", r.name.as_deref().unwrap_or("untitled"));
    let text = match &r.stage {
        None => r.text.clone(),
        Some(stage) => {
            if !stage_names(&r.text).contains(stage) {
                return Err(ApiError::bad_request(format!(
                    "stage `{stage}`: no such stage in {source} (its stages: {})",
                    stage_names(&r.text).join(", ")
                )));
            }
            let values = stage_values(&r.keys)?;
            if values.is_empty() {
                return Err(ApiError::bad_request("no key given: fill in at least one field of the form"));
            }
            match &r.state {
                Some(s) if s.name.trim().is_empty() || s.at.trim().is_empty() => {
                    return Err(ApiError::bad_request("a new state needs a name and a time (`at`, like \"5 s\")"));
                }
                Some(s) => with_state(&r.text, s, stage, values)
                    .map_err(|e| ApiError::bad_request(format!("{source}: cannot add the state: {e}")))?,
                None => {
                    let overrides: BTreeMap<String, String> =
                        values.into_iter().map(|(k, v)| (format!("stage.{stage}.{k}"), v.to_string())).collect();
                    let pairs: Vec<(&String, &String)> = overrides.iter().collect();
                    squall_scenario::apply_overrides(&source, &r.text, &pairs).map_err(|e| {
                        let p = Problem::from(&e);
                        ApiError::bad_request(p.report.clone()).with(serde_json::json!({ "problems": [p] }))
                    })?
                }
            }
        }
    };
    let problems = crate::library::check(&app, crate::workspace::Kind::Network, &source, &text);
    Ok(Json(serde_json::json!({ "text": text, "stages": stage_names(&text), "problems": problems })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_become_the_stage_keys_a_person_would_write() {
        let keys = CommonKeys {
            rate: Some("2 Mbit/s".into()),
            jitter: Some(" 5 ms ".into()),
            loss: Some("1%".into()),
            queue_packets: Some(50),
            aqm: Some("codel".into()),
            delay: Some("".into()),
            ..CommonKeys::default()
        };
        let v: Vec<String> = stage_values(&keys).unwrap().iter().map(|(k, v)| format!("{k} = {v}")).collect();
        assert_eq!(
            v,
            [
                "rate = \"2 Mbit/s\"",
                "jitter = { kind = \"uniform\", low = \"0 ms\", high = \"5 ms\" }",
                "error = { packet = \"1%\" }",
                "queue = { packets = 50, codel = {} }",
            ]
        );
        let bad = CommonKeys { aqm: Some("red".into()), ..CommonKeys::default() };
        assert!(stage_values(&bad).unwrap_err().message.contains("expected none, codel or pie"));
    }
}
