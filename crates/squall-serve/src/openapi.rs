//! The API's description, OpenAPI 3.1, served at /api/openapi.json. The
//! API tests (crates/squall/tests/serve.rs) call every operation listed
//! here and check that it is mounted.

use axum::Json;
use serde_json::{Value, json};

fn op(summary: &str, params: &[&str], body: Option<&str>, responses: &[(&str, &str)]) -> Value {
    let mut o = json!({ "summary": summary });
    if !params.is_empty() {
        o["parameters"] = params
            .iter()
            .map(|p| json!({ "name": p, "in": "path", "required": true, "schema": { "type": "string" } }))
            .collect();
    }
    if let Some(schema) = body {
        o["requestBody"] = json!({ "required": true, "content": { "application/json": {
            "schema": { "$ref": format!("#/components/schemas/{schema}") } } } });
    }
    let mut r = serde_json::Map::new();
    for (code, what) in responses {
        r.insert((*code).into(), json!({ "description": what }));
    }
    r.entry("400").or_insert_with(|| json!({ "description": "bad request: {\"error\": message}" }));
    r.insert("401".into(), json!({ "description": "no valid access token" }));
    o["responses"] = Value::Object(r);
    o
}

pub fn spec() -> Value {
    let kind_name = ["kind", "name"];
    json!({
      "openapi": "3.1.0",
      "info": { "title": "squall serve", "version": env!("CARGO_PKG_VERSION"),
        "description": "The control tool's API over a workspace of networks/, workloads/, experiments/ and results/. \
                        Every call needs the access token: header X-Squall-Token or the cookie the page sets." },
      "components": {
        "securitySchemes": {
          "token": { "type": "apiKey", "in": "header", "name": "X-Squall-Token" },
          "cookie": { "type": "apiKey", "in": "cookie", "name": "squall_token" }
        },
        "schemas": {
          "Write": { "type": "object", "required": ["text"], "additionalProperties": false,
            "properties": { "text": { "type": "string" } } },
          "Validate": { "type": "object", "required": ["kind", "text"], "additionalProperties": false,
            "properties": { "kind": { "enum": ["networks", "workloads", "experiments"] },
                            "text": { "type": "string" }, "name": { "type": "string" } } },
          "Set": { "type": "object", "required": ["name", "network", "replications"], "additionalProperties": false,
            "properties": { "name": { "type": "string" }, "network": { "type": "string" },
              "workload": { "type": "string" }, "replications": { "type": "integer", "minimum": 1 },
              "seed": { "type": "integer", "minimum": 0 }, "engine": { "enum": ["sim", "emu"] },
              "set": { "type": "object" }, "sweep": { "type": "object" } } },
          "Run": { "type": "object", "required": ["experiment"], "additionalProperties": false,
            "properties": { "experiment": { "type": "string" }, "resume": { "type": "boolean" } } },
          "Emulation": { "type": "object", "required": ["name", "network"], "additionalProperties": false,
            "properties": { "name": { "type": "string", "description": "results/NAME" },
              "network": { "type": "string" }, "workload": { "type": "string" },
              "duration_s": { "type": "number", "minimum": 1, "maximum": 600, "default": 20 } } },
          "Form": { "type": "object", "required": ["text"], "additionalProperties": false,
            "properties": { "text": { "type": "string" }, "name": { "type": "string" },
              "stage": { "type": "string", "description": "none: only list the stages" },
              "keys": { "type": "object", "additionalProperties": false, "properties": {
                "rate": { "type": "string" }, "delay": { "type": "string" },
                "jitter": { "type": "string", "description": "uniform from 0 to this" },
                "loss": { "type": "string" }, "queue_packets": { "type": "integer", "minimum": 0 },
                "drop": { "enum": ["tail", "head"] }, "aqm": { "enum": ["none", "codel", "pie"] } } },
              "state": { "type": "object", "required": ["name", "at"], "additionalProperties": false,
                "properties": { "name": { "type": "string" }, "at": { "type": "string" } } } } },
          "Blackout": { "type": "object", "required": ["on"], "additionalProperties": false,
            "properties": { "on": { "type": "boolean" }, "mode": { "enum": ["hold", "drop"], "default": "hold" },
              "direction": { "enum": ["both", "downlink", "uplink"], "default": "both" } } },
          "Background": { "type": "object", "required": ["stage", "generator", "action"],
            "additionalProperties": false,
            "properties": { "stage": { "type": "string" }, "generator": { "type": "string" },
              "action": { "oneOf": [ { "enum": ["start", "stop"] },
                { "type": "object", "required": ["rate"], "additionalProperties": false,
                  "properties": { "rate": { "type": "string", "examples": ["2 Mbit/s"] } } } ] } } },
          "State": { "type": "object", "required": ["name"], "additionalProperties": false,
            "properties": { "name": { "type": "string", "description": "a [[states]] name of the run's scenario" } } }
        }
      },
      "security": [{ "token": [] }, { "cookie": [] }],
      "paths": {
        "/api/openapi.json": { "get": op("This document", &[], None, &[("200", "OpenAPI 3.1")]) },
        "/api/files/{kind}": { "get": op("List networks, workloads or experiments", &["kind"], None,
            &[("200", "[{name, etag, size, modified_unix}]"), ("404", "no such kind")]) },
        "/api/files/{kind}/{name}": {
          "get": op("A file's text, etag (also the ETag header) and located problems", &kind_name, None,
            &[("200", "{name, text, etag, problems}"), ("404", "no such file"), ("403", "a link out of the workspace")]),
          "put": op("Create (If-None-Match: *) or replace (If-Match: etag) a file", &kind_name, Some("Write"),
            &[("200", "replaced"), ("201", "created"), ("409", "changed since loaded: {error, etag}"),
              ("413", "body over 1 MiB")]),
          "delete": op("Delete a file (If-Match: etag optional)", &kind_name, None,
            &[("204", "deleted"), ("404", "no such file"), ("409", "changed since loaded")])
        },
        "/api/validate": { "post": op("Check a text as the command line does", &[], Some("Validate"),
            &[("200", "{ok, problems: [{file, line, column, key, message, report}]}")]) },
        "/api/templates": { "get": op("The built-in scenarios", &[], None, &[("200", "[{name, summary, has_workload}]")]) },
        "/api/templates/{name}": { "get": op("A built-in scenario's network and workload texts", &["name"], None,
            &[("200", "{name, summary, network, workload}"), ("404", "no such template")]) },
        "/api/sets": { "post": op("Write experiments/NAME.toml for network × workload × replications and queue it",
            &[], Some("Set"), &[("201", "{job, experiment}"), ("409", "name taken")]) },
        "/api/runs": { "post": op("Queue an experiment file (squall run)", &[], Some("Run"),
            &[("201", "the job"), ("404", "no such experiment"), ("409", "results exist; resume")]) },
        "/api/jobs": { "get": op("The queue: state, done/total, elapsed_s, eta_s", &[], None, &[("200", "[job]")]) },
        "/api/jobs/{id}/cancel": { "post": op("Cancel a queued or running job", &["id"], None,
            &[("200", "the job"), ("404", "no such job"), ("409", "already finished")]) },
        "/api/results": { "get": op("Every run directory under results/", &[], None,
            &[("200", "[{name, experiment, sets, total, done, complete, modified_unix}]")]) },
        "/api/results/{name}": { "get": op("A run: summary table, results, plots, files", &["name"], None,
            &[("200", "{run, summary, results, plots, files}"), ("404", "no such run")]) },
        "/api/results/{name}/files/{path}": { "get": op("A file of a run (?download=1: as an attachment)",
            &["name", "path"], None, &[("200", "the file"), ("403", "a link out of the workspace"),
              ("404", "no such file")]) },
        "/api/results/{name}/replay": { "get": op("A finished run replayed from its events.csv as Server-Sent \
             Events shaped as `squall ctl watch --json` lines (?run=DIR: rep-0 or a `squall run` run directory; \
             &speed=S: seconds of the run per second, more than 0 and at most 1000, default 1); a line every \
             200 ms of the run's time, the last {end}", &["name"], None,
            &[("200", "text/event-stream"), ("400", "a bad speed or path"),
              ("404", "no events.csv or resolved scenario")]) },
        "/api/form": { "post": op("The library form's common keys of a network applied to the text being edited \
             (a stage's rate, delay, jitter, loss, queue and AQM, on the stage or as a new [[states]] entry), as \
             `--set` edits it; nothing is written", &[], Some("Form"),
            &[("200", "{text, stages, problems}"), ("400", "no such stage, no field given, a bad AQM")]) },
        "/api/server": { "get": op("What this server is: {version, workspace, root}; emulations are started and \
             changed only by a server running as root", &[], None, &[("200", "{version, workspace, root}")]) },
        "/api/emulations": {
          "get": op("The running emulations (as `squall ctl list` finds them), and the one started here last \
             with its `launch` (state running, done or failed, error) while it starts and after it ended", &[], None,
            &[("200", "[{id, info: {scenario, hosts, states, duration, ...}, launch}] (or {id, error} for a run \
               that did not answer)")]),
          "post": op("Start an emulation of networks/NETWORK.toml (with workloads/WORKLOAD.toml) for duration_s \
             seconds: `squall emu` into results/NAME; one at a time; needs a server running as root",
            &[], Some("Emulation"),
            &[("201", "{id, name, network, workload, duration_s, state}: id is the run id for watch and state"),
              ("400", "a bad name or duration, or the scenario's located error: {error, problems}"),
              ("403", "the server does not run as root"),
              ("409", "an emulation started here still runs, or results/NAME exists")]) },
        "/api/emulations/{id}/watch": { "get": op(
            "The run's counters as Server-Sent Events, one `data:` JSON line every 200 ms (`squall ctl watch \
             --json`: time, state, events, paths with delivered_bytes and throughput_bps, stages, flows, \
             dropped_lines), then {\"end\": why}", &["id"], None,
            &[("200", "text/event-stream"), ("404", "no such running emulation")]) },
        "/api/emulations/{id}/state": { "post": op("Enter a scenario state now (`squall ctl state`; logged in \
             events.csv)", &["id"], Some("State"),
            &[("200", "{entered, time}"), ("400", "no such state, with the scenario's states"),
              ("404", "no such running emulation")]) },
        "/api/emulations/{id}/blackout": { "post": op("Start or end a blackout now (`squall ctl blackout`; \
             logged in events.csv as blackout_start / blackout_end)", &["id"], Some("Blackout"),
            &[("200", "{blackout, stages, time}"), ("404", "no such running emulation")]) },
        "/api/emulations/{id}/background": { "post": op("Start, stop or re-rate one background-load generator \
             of a stage now (`squall ctl background`; logged in events.csv)", &["id"], Some("Background"),
            &[("200", "{stage, generator, ...}"), ("400", "no such stage or generator, or a rate on a \
               generator not given by one"), ("404", "no such running emulation")]) }
      }
    })
}

pub async fn document() -> Json<Value> {
    Json(spec())
}
