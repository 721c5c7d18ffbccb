//! Toxiproxy's JSON shapes and errors, as its server (`api.go`, `proxy.go`,
//! `toxics/toxic.go`) writes and reads them: field names, defaults and messages match, so a
//! Toxiproxy client cannot tell the difference. Where Toxiproxy accepts nonsense silently (an
//! unknown attribute, a negative latency, a toxicity above 1), this API answers 400 naming
//! the field instead.

use crate::{Stream, Toxic, ToxicKind};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// The toxic types this proxy implements.
pub const SUPPORTED_TYPES: [&str; 2] = ["latency", "timeout"];

/// The other toxic types Toxiproxy has: named in the error, so a client learns that the type
/// exists but this proxy does not implement it.
const TOXIPROXY_ONLY_TYPES: [&str; 6] = [
    "bandwidth",
    "slow_close",
    "slicer",
    "limit_data",
    "reset_peer",
    "noop",
];

/// An API error: Toxiproxy's `{"error": message, "status": code}` body with that status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The message (Toxiproxy's wording where it has one).
    pub message: String,
}

impl ApiError {
    fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// 400 `bad request body: <why>`.
    pub fn bad_body(why: impl std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, format!("bad request body: {why}"))
    }

    /// 400 `missing required field: <field>`.
    pub fn missing(field: impl std::fmt::Display) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("missing required field: {field}"),
        )
    }

    /// 404 `proxy not found`.
    pub fn proxy_not_found() -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "proxy not found")
    }

    /// 409 `proxy already exists`.
    pub fn proxy_exists() -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "proxy already exists")
    }

    /// 404 `toxic not found`.
    pub fn toxic_not_found() -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "toxic not found")
    }

    /// 409 `toxic already exists`.
    pub fn toxic_exists() -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "toxic already exists")
    }

    /// 500 with the cause (Toxiproxy answers a failed listen with 500 too).
    pub fn internal(err: &anyhow::Error) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("{err:#}"))
    }

    /// 403 for browsers (Toxiproxy's guard against web pages driving the API).
    pub fn browser() -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, "User agent not allowed")
    }

    /// The JSON body.
    pub fn body(&self) -> Value {
        serde_json::json!({ "error": self.message, "status": self.status.as_u16() })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.status.as_u16())
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json(self.status, &self.body())
    }
}

/// A JSON response.
pub fn json(status: StatusCode, body: &impl Serialize) -> Response {
    let bytes = serde_json::to_vec(body).expect("API values serialize");
    (status, [(header::CONTENT_TYPE, "application/json")], bytes).into_response()
}

/// A proxy as the API shows it (Toxiproxy's `proxyToxics`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProxyJson {
    /// Its name.
    pub name: String,
    /// Where it listens.
    pub listen: String,
    /// Where it forwards.
    pub upstream: String,
    /// Whether it listens now.
    pub enabled: bool,
    /// Its toxics.
    pub toxics: Vec<ToxicJson>,
}

/// A toxic as the API shows it (Toxiproxy's `ToxicWrapper`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToxicJson {
    /// The type's attributes, in milliseconds.
    pub attributes: BTreeMap<String, u64>,
    /// Its name.
    pub name: String,
    /// `latency` or `timeout`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `upstream` or `downstream`.
    pub stream: String,
    /// Probability that it applies to a link.
    pub toxicity: f32,
}

impl From<&Toxic> for ToxicJson {
    fn from(t: &Toxic) -> ToxicJson {
        let ms = |d: Duration| d.as_millis() as u64;
        let attributes = match t.kind {
            ToxicKind::Latency { latency, jitter } => BTreeMap::from([
                ("latency".into(), ms(latency)),
                ("jitter".into(), ms(jitter)),
            ]),
            ToxicKind::Timeout { timeout } => BTreeMap::from([("timeout".into(), ms(timeout))]),
        };
        ToxicJson {
            attributes,
            name: t.name.clone(),
            kind: t.kind.type_name().to_string(),
            stream: t.stream.as_str().to_string(),
            toxicity: t.toxicity,
        }
    }
}

/// A proxy to create (`POST /proxies`, one entry of `POST /populate` or of a config file).
#[derive(Debug, Clone, Deserialize, PartialEq)]
pub struct ProxySpec {
    /// Required.
    #[serde(default)]
    pub name: String,
    /// `host:port` (port 0: any free port); empty: every address, any free port.
    #[serde(default)]
    pub listen: String,
    /// Required: `host:port` of the server.
    #[serde(default)]
    pub upstream: String,
    /// Defaults to `true`.
    #[serde(default)]
    pub enabled: Option<bool>,
}

impl ProxySpec {
    /// The spec of `POST /proxies`, validated (Toxiproxy's messages).
    pub fn parse_one(body: &[u8]) -> Result<ProxySpec, ApiError> {
        let spec: ProxySpec = serde_json::from_slice(body).map_err(ApiError::bad_body)?;
        spec.check("")?;
        Ok(spec)
    }

    /// The list of `POST /populate` (or a config file), every entry validated before any is
    /// used (as Toxiproxy does).
    pub fn parse_list(body: &[u8]) -> Result<Vec<ProxySpec>, ApiError> {
        let specs: Vec<ProxySpec> = serde_json::from_slice(body).map_err(ApiError::bad_body)?;
        for (i, s) in specs.iter().enumerate() {
            s.check(&format!(" at proxy {}", i + 1))?;
        }
        Ok(specs)
    }

    fn check(&self, at: &str) -> Result<(), ApiError> {
        if self.name.is_empty() {
            return Err(ApiError::missing(format!("name{at}")));
        }
        if self.upstream.is_empty() {
            return Err(ApiError::missing(format!("upstream{at}")));
        }
        Ok(())
    }

    /// Its listen address, resolved (`""` and `:PORT` mean every address, as in Go).
    pub async fn listen_addr(&self) -> Result<SocketAddr, ApiError> {
        resolve_listen(&self.listen).await
    }
}

/// Resolves a listen address as Go's `net.Listen` reads it.
pub async fn resolve_listen(listen: &str) -> Result<SocketAddr, ApiError> {
    let text = if listen.is_empty() {
        "0.0.0.0:0".to_string()
    } else if let Some(port) = listen.strip_prefix(':') {
        format!("0.0.0.0:{port}")
    } else {
        listen.to_string()
    };
    let bad = |why: String| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("bad listen address {listen:?}: {why}"),
        )
    };
    tokio::net::lookup_host(text.as_str())
        .await
        .map_err(|e| bad(e.to_string()))?
        .next()
        .ok_or_else(|| bad("resolves to no address".into()))
}

/// A toxic from the body of `POST /proxies/{proxy}/toxics` (Toxiproxy's defaults: stream
/// `downstream`, toxicity 1, name `<type>_<stream>`).
pub fn toxic_from_json(body: &[u8]) -> Result<Toxic, ApiError> {
    #[derive(Deserialize)]
    struct Input {
        #[serde(default)]
        name: String,
        #[serde(rename = "type", default)]
        kind: String,
        #[serde(default)]
        stream: Option<String>,
        #[serde(default)]
        toxicity: Option<f32>,
        #[serde(default)]
        attributes: Option<Map<String, Value>>,
    }
    let input: Input = serde_json::from_slice(body).map_err(ApiError::bad_body)?;
    let stream_name = input.stream.as_deref().unwrap_or("downstream");
    let stream = Stream::parse(stream_name).ok_or_else(|| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "stream was invalid, can be either upstream or downstream",
        )
    })?;
    let kind = kind_from(&input.kind, &input.attributes.unwrap_or_default(), None)?;
    let name = if input.name.is_empty() {
        format!("{}_{}", input.kind, stream.as_str())
    } else {
        input.name
    };
    Ok(Toxic {
        name,
        stream,
        toxicity: toxicity(input.toxicity.unwrap_or(1.0))?,
        kind,
    })
}

/// `existing` updated by the body of `POST|PATCH /proxies/{proxy}/toxics/{toxic}`: the
/// attributes and toxicity it names change, the rest stays (as in Toxiproxy).
pub fn toxic_update(existing: &Toxic, body: &[u8]) -> Result<Toxic, ApiError> {
    #[derive(Deserialize)]
    struct Input {
        #[serde(default)]
        toxicity: Option<f32>,
        #[serde(default)]
        attributes: Option<Map<String, Value>>,
    }
    let input: Input = serde_json::from_slice(body).map_err(ApiError::bad_body)?;
    let attributes = input.attributes.unwrap_or_default();
    let kind = kind_from(existing.kind.type_name(), &attributes, Some(existing.kind))?;
    Ok(Toxic {
        kind,
        toxicity: toxicity(input.toxicity.unwrap_or(existing.toxicity))?,
        ..existing.clone()
    })
}

fn toxicity(t: f32) -> Result<f32, ApiError> {
    if (0.0..=1.0).contains(&t) {
        Ok(t)
    } else {
        Err(ApiError::bad_body(format!(
            "toxicity must be between 0 and 1, got {t}"
        )))
    }
}

/// The kind `type_name` with `attributes` over `base` (or over zeros: Go's defaults).
fn kind_from(
    type_name: &str,
    attributes: &Map<String, Value>,
    base: Option<ToxicKind>,
) -> Result<ToxicKind, ApiError> {
    let allowed: &[&str] = match type_name {
        "latency" => &["latency", "jitter"],
        "timeout" => &["timeout"],
        other if TOXIPROXY_ONLY_TYPES.contains(&other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "invalid toxic type: {other} is a Toxiproxy toxic that lockbench's proxy \
                     does not implement (supported: {})",
                    SUPPORTED_TYPES.join(", ")
                ),
            ));
        }
        other => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "invalid toxic type: {other:?} (supported: {})",
                    SUPPORTED_TYPES.join(", ")
                ),
            ));
        }
    };
    if let Some(unknown) = attributes.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(ApiError::bad_body(format!(
            "unknown attribute {unknown} for a {type_name} toxic (attributes: {})",
            allowed.join(", ")
        )));
    }
    let ms = |key: &str, default: Duration| -> Result<Duration, ApiError> {
        match attributes.get(key) {
            None => Ok(default),
            Some(v) => v.as_u64().map(Duration::from_millis).ok_or_else(|| {
                ApiError::bad_body(format!(
                    "attribute {key} must be a whole number of milliseconds >= 0, got {v}"
                ))
            }),
        }
    };
    Ok(match (type_name, base) {
        ("latency", base) => {
            let (l, j) = match base {
                Some(ToxicKind::Latency { latency, jitter }) => (latency, jitter),
                Some(ToxicKind::Timeout { .. }) | None => (Duration::ZERO, Duration::ZERO),
            };
            ToxicKind::Latency {
                latency: ms("latency", l)?,
                jitter: ms("jitter", j)?,
            }
        }
        (_, base) => {
            let t = match base {
                Some(ToxicKind::Timeout { timeout }) => timeout,
                Some(ToxicKind::Latency { .. }) | None => Duration::ZERO,
            };
            ToxicKind::Timeout {
                timeout: ms("timeout", t)?,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(latency: u64, jitter: u64) -> ToxicKind {
        ToxicKind::Latency {
            latency: Duration::from_millis(latency),
            jitter: Duration::from_millis(jitter),
        }
    }

    #[test]
    fn a_toxic_takes_toxiproxys_defaults() {
        let t = toxic_from_json(br#"{"type":"latency","attributes":{"latency":50}}"#).unwrap();
        assert_eq!(t.name, "latency_downstream");
        assert_eq!(t.stream, Stream::Downstream);
        assert_eq!(t.toxicity, 1.0);
        assert_eq!(t.kind, latency(50, 0));
        let back = ToxicJson::from(&t);
        assert_eq!(back.kind, "latency");
        assert_eq!(back.attributes["latency"], 50);
        assert_eq!(back.attributes["jitter"], 0);
    }

    #[test]
    fn an_update_changes_only_what_it_names() {
        let t = toxic_from_json(
            br#"{"name":"slow","type":"latency","stream":"upstream","toxicity":0.5,
                 "attributes":{"latency":50,"jitter":5}}"#,
        )
        .unwrap();
        let u = toxic_update(&t, br#"{"attributes":{"jitter":9}}"#).unwrap();
        assert_eq!(u.name, "slow");
        assert_eq!(u.stream, Stream::Upstream);
        assert_eq!(u.toxicity, 0.5);
        assert_eq!(u.kind, latency(50, 9));
    }

    #[test]
    fn bad_toxics_are_named() {
        let err = |b: &[u8]| toxic_from_json(b).unwrap_err();
        let e = err(br#"{"type":"bandwidth","attributes":{"rate":10}}"#);
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.message.contains("bandwidth"), "{e}");
        assert!(e.message.contains("latency, timeout"), "{e}");
        assert!(err(br#"{"type":"wormhole"}"#).message.contains("wormhole"));
        assert!(
            err(br#"{"type":"timeout","stream":"sideways"}"#)
                .message
                .contains("stream")
        );
        let e = err(br#"{"type":"latency","attributes":{"latancy":5}}"#);
        assert!(e.message.contains("latancy"), "{e}");
        let e = err(br#"{"type":"latency","attributes":{"latency":-5}}"#);
        assert!(e.message.contains("latency"), "{e}");
        assert!(
            err(br#"{"type":"timeout","toxicity":2}"#)
                .message
                .contains("toxicity")
        );
        assert!(err(b"{").message.starts_with("bad request body"));
    }

    #[test]
    fn proxy_specs_need_a_name_and_an_upstream() {
        let e = ProxySpec::parse_one(br#"{"name":"r","listen":"127.0.0.1:0"}"#).unwrap_err();
        assert_eq!(e.message, "missing required field: upstream");
        let e = ProxySpec::parse_list(br#"[{"name":"a","upstream":"x:1"},{"upstream":"x:2"}]"#)
            .unwrap_err();
        assert_eq!(e.message, "missing required field: name at proxy 2");
        let specs = ProxySpec::parse_list(
            br#"[{"name":"a","listen":"[::]:0","upstream":"x:1","enabled":false,"toxics":[]}]"#,
        )
        .unwrap();
        assert_eq!(specs[0].enabled, Some(false));
    }

    #[tokio::test]
    async fn listen_addresses_read_like_go() {
        assert_eq!(
            resolve_listen("").await.unwrap(),
            "0.0.0.0:0".parse().unwrap()
        );
        assert_eq!(
            resolve_listen(":8474").await.unwrap(),
            "0.0.0.0:8474".parse().unwrap()
        );
        assert_eq!(
            resolve_listen("127.0.0.1:26379").await.unwrap(),
            "127.0.0.1:26379".parse().unwrap()
        );
        let e = resolve_listen("nonsense").await.unwrap_err();
        assert!(e.message.contains("nonsense"), "{e}");
    }
}
