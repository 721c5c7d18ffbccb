//! The handlers: one per Toxiproxy endpoint, each a few lines over [`LinkProxy`] (the
//! semantics follow Toxiproxy's `api.go` and `proxy_collection.go`; see the module doc).

use super::Proxies;
use super::wire::{
    ApiError, ProxyJson, ProxySpec, ToxicJson, json, resolve_listen, toxic_from_json, toxic_update,
};
use crate::{LinkProxy, Stream};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use std::collections::BTreeMap;

type Result<T> = std::result::Result<T, ApiError>;

pub(super) fn router(proxies: Proxies) -> Router {
    Router::new()
        .route("/version", get(version))
        .route("/reset", post(reset))
        .route("/proxies", get(index).post(create))
        .route("/populate", post(populate))
        .route(
            "/proxies/{proxy}",
            get(show_proxy).post(update).patch(update).delete(delete),
        )
        .route(
            "/proxies/{proxy}/toxics",
            get(toxic_index).post(toxic_create),
        )
        .route(
            "/proxies/{proxy}/toxics/{toxic}",
            get(toxic_show)
                .post(toxic_change)
                .patch(toxic_change)
                .delete(toxic_delete),
        )
        .layer(middleware::from_fn(refuse_browsers))
        .with_state(proxies)
}

/// A proxy as the API shows it: toxics of the upstream chain first, then downstream, each in
/// the order added (Toxiproxy's order).
pub(super) fn show(p: &LinkProxy) -> ProxyJson {
    ProxyJson {
        name: p.name().to_string(),
        listen: p.addr().to_string(),
        upstream: p.upstream().to_string(),
        enabled: p.is_enabled(),
        toxics: toxics_of(p),
    }
}

fn toxics_of(p: &LinkProxy) -> Vec<ToxicJson> {
    let mut toxics = p.toxics();
    toxics.sort_by_key(|t| t.stream == Stream::Downstream);
    toxics.iter().map(ToxicJson::from).collect()
}

async fn refuse_browsers(request: Request, next: Next) -> Response {
    let agent = request.headers().get(header::USER_AGENT);
    if agent.is_some_and(|a| a.as_bytes().starts_with(b"Mozilla/")) {
        return ApiError::browser().into_response();
    }
    next.run(request).await
}

async fn version() -> Response {
    let body = format!(
        "{{\"version\": \"lockbench-{}\"}}\n",
        env!("CARGO_PKG_VERSION")
    );
    (
        [(header::CONTENT_TYPE, "application/json;charset=utf-8")],
        body,
    )
        .into_response()
}

async fn reset(State(proxies): State<Proxies>) -> Result<StatusCode> {
    let mut proxies = proxies.lock().await;
    for p in proxies.values_mut() {
        p.enable().await.map_err(|e| ApiError::internal(&e))?;
        p.clear().await.map_err(|e| ApiError::internal(&e))?;
    }
    Ok(StatusCode::NO_CONTENT)
}

async fn index(State(proxies): State<Proxies>) -> Response {
    let proxies = proxies.lock().await;
    let all: BTreeMap<&String, ProxyJson> = proxies.iter().map(|(n, p)| (n, show(p))).collect();
    json(StatusCode::OK, &all)
}

/// A new proxy from `spec`, started unless it says `enabled: false`.
async fn start(spec: &ProxySpec) -> Result<LinkProxy> {
    let mut p = LinkProxy::new(&spec.name, spec.listen_addr().await?, &spec.upstream);
    if spec.enabled.unwrap_or(true) {
        p.enable().await.map_err(|e| ApiError::internal(&e))?;
    }
    Ok(p)
}

async fn create(State(proxies): State<Proxies>, body: Bytes) -> Result<Response> {
    let spec = ProxySpec::parse_one(&body)?;
    let mut proxies = proxies.lock().await;
    if proxies.contains_key(&spec.name) {
        return Err(ApiError::proxy_exists());
    }
    let p = start(&spec).await?;
    let shown = show(&p);
    proxies.insert(spec.name, p);
    Ok(json(StatusCode::CREATED, &shown))
}

/// `POST /populate`'s work, the proxies handled so far pushed to `out` (an error keeps them:
/// Toxiproxy reports them beside the error).
pub(super) async fn populate_into(
    proxies: &Proxies,
    specs: Vec<ProxySpec>,
    out: &mut Vec<ProxyJson>,
) -> Result<()> {
    let mut proxies = proxies.lock().await;
    for spec in specs {
        let listen = spec.listen_addr().await?;
        if let Some(existing) = proxies.get(&spec.name)
            && existing.addr() == listen
            && existing.upstream() == spec.upstream
        {
            out.push(show(existing));
            continue;
        }
        // Replacing: the old proxy must release its port before the new one binds it.
        if let Some(mut old) = proxies.remove(&spec.name) {
            old.disable().await;
        }
        let p = start(&spec).await?;
        out.push(show(&p));
        proxies.insert(spec.name, p);
    }
    Ok(())
}

async fn populate(State(proxies): State<Proxies>, body: Bytes) -> Response {
    let mut out = Vec::new();
    let result = match ProxySpec::parse_list(&body) {
        Ok(specs) => populate_into(&proxies, specs, &mut out).await,
        Err(e) => Err(e),
    };
    match result {
        Ok(()) => json(StatusCode::CREATED, &serde_json::json!({ "proxies": out })),
        Err(e) => {
            let mut body = e.body();
            body["proxies"] = serde_json::to_value(&out).expect("proxies serialize");
            json(e.status, &body)
        }
    }
}

async fn show_proxy(State(proxies): State<Proxies>, Path(name): Path<String>) -> Result<Response> {
    let proxies = proxies.lock().await;
    let p = proxies.get(&name).ok_or_else(ApiError::proxy_not_found)?;
    Ok(json(StatusCode::OK, &show(p)))
}

async fn update(
    State(proxies): State<Proxies>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response> {
    #[derive(Deserialize)]
    struct Input {
        listen: Option<String>,
        upstream: Option<String>,
        enabled: Option<bool>,
    }
    let mut proxies = proxies.lock().await;
    let p = proxies
        .get_mut(&name)
        .ok_or_else(ApiError::proxy_not_found)?;
    let input: Input = serde_json::from_slice(&body).map_err(ApiError::bad_body)?;
    let listen = match &input.listen {
        Some(l) => resolve_listen(l).await?,
        None => p.addr(),
    };
    let upstream = input.upstream.unwrap_or_else(|| p.upstream().to_string());
    let was_enabled = p.is_enabled();
    if listen != p.addr() || upstream != p.upstream() {
        // Toxiproxy restarts a proxy whose addresses change, dropping its links.
        p.retarget(listen, &upstream).await;
    }
    if input.enabled.unwrap_or(was_enabled) {
        p.enable().await.map_err(|e| ApiError::internal(&e))?;
    } else {
        p.disable().await;
    }
    Ok(json(StatusCode::OK, &show(p)))
}

async fn delete(State(proxies): State<Proxies>, Path(name): Path<String>) -> Result<StatusCode> {
    let mut proxies = proxies.lock().await;
    let mut p = proxies
        .remove(&name)
        .ok_or_else(ApiError::proxy_not_found)?;
    p.disable().await;
    Ok(StatusCode::NO_CONTENT)
}

async fn toxic_index(State(proxies): State<Proxies>, Path(name): Path<String>) -> Result<Response> {
    let proxies = proxies.lock().await;
    let p = proxies.get(&name).ok_or_else(ApiError::proxy_not_found)?;
    Ok(json(StatusCode::OK, &toxics_of(p)))
}

async fn toxic_create(
    State(proxies): State<Proxies>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let proxies = proxies.lock().await;
    let p = proxies.get(&name).ok_or_else(ApiError::proxy_not_found)?;
    let toxic = toxic_from_json(&body)?;
    let shown = ToxicJson::from(&toxic);
    if !p.add_toxic(toxic) {
        return Err(ApiError::toxic_exists());
    }
    // Toxiproxy answers a new toxic with 200, not 201.
    Ok(json(StatusCode::OK, &shown))
}

async fn toxic_show(
    State(proxies): State<Proxies>,
    Path((name, toxic)): Path<(String, String)>,
) -> Result<Response> {
    let proxies = proxies.lock().await;
    let p = proxies.get(&name).ok_or_else(ApiError::proxy_not_found)?;
    let t = p.toxics().into_iter().find(|t| t.name == toxic);
    let t = t.ok_or_else(ApiError::toxic_not_found)?;
    Ok(json(StatusCode::OK, &ToxicJson::from(&t)))
}

async fn toxic_change(
    State(proxies): State<Proxies>,
    Path((name, toxic)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response> {
    let proxies = proxies.lock().await;
    let p = proxies.get(&name).ok_or_else(ApiError::proxy_not_found)?;
    let t = p.toxics().into_iter().find(|t| t.name == toxic);
    let updated = toxic_update(&t.ok_or_else(ApiError::toxic_not_found)?, &body)?;
    p.replace_toxic(updated.clone());
    Ok(json(StatusCode::OK, &ToxicJson::from(&updated)))
}

async fn toxic_delete(
    State(proxies): State<Proxies>,
    Path((name, toxic)): Path<(String, String)>,
) -> Result<StatusCode> {
    let proxies = proxies.lock().await;
    let p = proxies.get(&name).ok_or_else(ApiError::proxy_not_found)?;
    if !p.remove_toxic(&toxic) {
        return Err(ApiError::toxic_not_found());
    }
    Ok(StatusCode::NO_CONTENT)
}
