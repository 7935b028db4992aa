//! `--set key=value` overrides: edits of the scenario's TOML text made
//! before it is read, so that an overridden value is checked like one
//! written in the file.
//!
//! A key is a dotted path; numeric parts index arrays
//! (`links.0.downlink.0.rate`). `stage.<name>.<key>` addresses a stage by
//! its name wherever it is. A value is taken as TOML when it parses as a
//! TOML value (`5`, `true`, `0.01`, `{ packet = "1%" }`), else as a string
//! (`10 Mbit/s`).

use toml_edit::{DocumentMut, Item, Table, Value};

use crate::error::{ErrorKind, ScenarioError};

/// Applies `overrides` (key, value) in order to the scenario text and
/// returns the edited text; `source_name` (the file name) names the
/// scenario in errors. Every part of a key but the last must exist; the
/// last may be new (a parameter the file leaves at its default, checked
/// when the edited text is parsed).
///
/// ```
/// let text = "name = \"x\"\nseed = 1\n";
/// let out = squall_scenario::apply_overrides("x.toml", text, &[("seed", "5")]).unwrap();
/// assert_eq!(out, "name = \"x\"\nseed = 5\n");
/// ```
pub fn apply_overrides<K: AsRef<str>, V: AsRef<str>>(
    source_name: &str,
    text: &str,
    overrides: &[(K, V)],
) -> Result<String, ScenarioError> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        ScenarioError::new(ErrorKind::Syntax, source_name, Some(text), e.span())
            .message(format!("invalid TOML: {}", e.message().trim_end()))
    })?;
    for (key, value) in overrides {
        let (key, value) = (key.as_ref(), value.as_ref());
        let fail = |msg: String| ScenarioError::new(ErrorKind::Override, source_name, None, None).key(key).message(msg);
        let path = expand(&doc, key).map_err(fail)?;
        set(doc.as_table_mut(), &path, parse_value(value)).map_err(fail)?;
    }
    Ok(doc.to_string())
}

/// Splits a command-line `key=value` at its first `=`.
pub fn parse_set(arg: &str) -> Result<(String, String), ScenarioError> {
    match arg.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(ScenarioError::new(ErrorKind::Override, "--set", None, None).key(arg).message(
            "expected key=value, like links.0.downlink.0.rate=\"10 Mbit/s\" or stage.gsm-down.delay=\"100 ms\"",
        )),
    }
}

/// The value as TOML if it is one, else as a string.
fn parse_value(v: &str) -> Value {
    v.trim().parse::<Value>().unwrap_or_else(|_| Value::from(v.trim()))
}

/// The key's parts, with `stage.<name>` replaced by the stage's place.
fn expand(doc: &DocumentMut, key: &str) -> Result<Vec<String>, String> {
    let parts: Vec<String> = key.split('.').map(|p| p.trim().to_string()).collect();
    if parts.iter().any(String::is_empty) {
        return Err("a key is dotted names and indexes, like links.0.downlink.0.rate or stage.gsm-down.rate".into());
    }
    if parts[0] != "stage" {
        return Ok(parts);
    }
    let Some(stage) = parts.get(1) else {
        return Err("name a stage and a parameter, like stage.gsm-down.rate".into());
    };
    if parts.len() < 3 {
        return Err(format!("name a parameter of stage `{stage}`, like stage.{stage}.rate"));
    }
    let mut all = Vec::new();
    if let Some(links) = doc.get("links") {
        for (i, link) in items(links).into_iter().enumerate() {
            for dir in ["downlink", "uplink"] {
                let Some(stages) = link.get(dir) else { continue };
                for (j, st) in items(stages).into_iter().enumerate() {
                    let Some(n) = st.get("name").and_then(Item::as_str) else { continue };
                    if n == stage {
                        let mut p = vec!["links".into(), i.to_string(), dir.into(), j.to_string()];
                        p.extend(parts[2..].iter().cloned());
                        return Ok(p);
                    }
                    all.push(format!("`{n}`"));
                }
            }
        }
    }
    Err(format!("no stage named `{stage}`; the stages are {}", all.join(", ")))
}

/// A read-only view of one table of an array of tables or an array of
/// inline tables.
enum TableRef<'a> {
    Table(&'a Table),
    Inline(&'a toml_edit::InlineTable),
}

impl TableRef<'_> {
    fn get(&self, k: &str) -> Option<&Item> {
        match self {
            TableRef::Table(t) => t.get(k),
            TableRef::Inline(t) => t.get_key_value(k).map(|(_, v)| v),
        }
    }
}

fn items(item: &Item) -> Vec<TableRef<'_>> {
    if let Some(aot) = item.as_array_of_tables() {
        aot.iter().map(TableRef::Table).collect()
    } else if let Some(arr) = item.as_array() {
        arr.iter().filter_map(|v| v.as_inline_table().map(TableRef::Inline)).collect()
    } else {
        Vec::new()
    }
}

/// Where the walk is: a table, an item of a table, or a value inside an
/// inline table or array.
enum Place<'a> {
    Table(&'a mut Table),
    Item(&'a mut Item),
    Value(&'a mut Value),
}

fn set(root: &mut Table, path: &[String], value: Value) -> Result<(), String> {
    let mut place = Place::Table(root);
    let mut shown = String::new();
    for (k, part) in path.iter().enumerate() {
        if !shown.is_empty() {
            shown.push('.');
        }
        shown.push_str(part);
        if k + 1 == path.len() {
            return put(place, part, value, &shown);
        }
        place = child(place, part).ok_or_else(|| missing(&shown))?;
    }
    Err("an empty key names nothing; give one like links.0.downlink.0.rate".into())
}

fn missing(shown: &str) -> String {
    format!(
        "no key `{shown}` in the scenario; every part of the key but the last must exist \
         (set a whole table instead, like stage.gsm-down.queue={{ packets = 10 }})"
    )
}

fn child<'a>(place: Place<'a>, part: &str) -> Option<Place<'a>> {
    let index = part.parse::<usize>().ok();
    match place {
        Place::Table(t) => t.get_mut(part).map(Place::Item),
        Place::Item(item) => match (index, item) {
            (Some(n), Item::ArrayOfTables(aot)) => aot.get_mut(n).map(Place::Table),
            (Some(n), Item::Value(Value::Array(a))) => a.get_mut(n).map(Place::Value),
            (_, Item::Table(t)) => t.get_mut(part).map(Place::Item),
            (_, Item::Value(Value::InlineTable(t))) => t.get_mut(part).map(Place::Value),
            _ => None,
        },
        Place::Value(v) => match (index, v) {
            (Some(n), Value::Array(a)) => a.get_mut(n).map(Place::Value),
            (_, Value::InlineTable(t)) => t.get_mut(part).map(Place::Value),
            _ => None,
        },
    }
}

/// Sets `part` of `place` to `value`, keeping the comments around an old
/// value.
fn put(place: Place<'_>, part: &str, value: Value, shown: &str) -> Result<(), String> {
    let index = part.parse::<usize>().ok();
    let not_table = || {
        let parent = shown.rsplit_once('.').map_or("", |(p, _)| p);
        format!("`{parent}` is not a table or an array, so it has no key `{part}`")
    };
    match place {
        Place::Table(t) => {
            put_in_table(t, part, value);
            Ok(())
        }
        Place::Item(item) => match (index, item) {
            (Some(_), Item::ArrayOfTables(_)) => {
                Err(format!("`{shown}` is a whole table; set one of its keys, like {shown}.name"))
            }
            (Some(n), Item::Value(Value::Array(a))) => put_in_array(a, n, value, shown),
            (_, Item::Table(t)) => {
                put_in_table(t, part, value);
                Ok(())
            }
            (_, Item::Value(Value::InlineTable(t))) => {
                put_in_inline_table(t, part, value);
                Ok(())
            }
            _ => Err(not_table()),
        },
        Place::Value(v) => match (index, v) {
            (Some(n), Value::Array(a)) => put_in_array(a, n, value, shown),
            (_, Value::InlineTable(t)) => {
                put_in_inline_table(t, part, value);
                Ok(())
            }
            _ => Err(not_table()),
        },
    }
}

/// Sets `part` in an inline table, keeping the old value's spacing.
fn put_in_inline_table(t: &mut toml_edit::InlineTable, part: &str, mut value: Value) {
    match t.get_mut(part) {
        Some(old) => {
            *value.decor_mut() = old.decor().clone();
            *old = value;
        }
        None => {
            t.insert(part, value);
        }
    }
}

fn put_in_table(t: &mut Table, part: &str, mut value: Value) {
    if let Some(Item::Value(old)) = t.get(part) {
        *value.decor_mut() = old.decor().clone();
    }
    t.insert(part, Item::Value(value));
}

fn put_in_array(a: &mut toml_edit::Array, n: usize, mut value: Value, shown: &str) -> Result<(), String> {
    let len = a.len();
    let old = a.get_mut(n).ok_or_else(|| format!("no element `{shown}`: the array has {len} element(s), from 0"))?;
    *value.decor_mut() = old.decor().clone();
    *old = value;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_toml_when_they_parse() {
        assert_eq!(parse_value("5").as_integer(), Some(5));
        assert_eq!(parse_value("true").as_bool(), Some(true));
        assert_eq!(parse_value("10 Mbit/s").as_str(), Some("10 Mbit/s"));
        assert!(parse_value("{ packet = \"1%\" }").is_inline_table());
    }
}
