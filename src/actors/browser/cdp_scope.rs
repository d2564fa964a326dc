//! The browser-level guard of a session's DevTools connection (`cdpUrl`), for clients that
//! connect to a browser: Playwright's `connectOverCDP`, Puppeteer's `connect`. The
//! browser's own endpoint sees every context of the Chromium process, the other sessions'
//! and the scrapes' too; through this guard a client sees one: its session's incognito
//! context.
//!
//! Both directions are read. From the client, a command for a page session passes when the
//! session is one of this context's (and the page rules of [`super::cdp`] allow it); a
//! browser-level command passes when it is about this context's targets, and some are
//! rewritten: `Target.createTarget` opens its page in this context, `Target.setAutoAttach`
//! never holds new targets (a held target of another context would wait for this client
//! forever), `Target.getBrowserContexts` and `Browser.setDownloadBehavior` are answered
//! here (downloads stay off). From the browser, events and answers about other contexts'
//! targets and sessions are dropped, and target lists are cut to this context's. The
//! context's targets and sessions are learnt from those events and answers as they pass.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use super::cdp;

/// What the guard knows of its context.
#[derive(Debug)]
pub struct Scope {
    context: String,
    targets: HashSet<String>,
    sessions: HashSet<String>,
    /// Browser-level commands whose answers must be read: by command id.
    pending: HashMap<String, Follow>,
}

/// What an answer tells.
#[derive(Debug, Clone, Copy)]
enum Follow {
    /// A list of targets, to be cut to this context's.
    Targets,
    /// A target made in this context.
    Created,
    /// A session attached to a target of this context.
    Attached,
}

/// What routes a browser's message: its answer id, event name and session.
#[derive(serde::Deserialize)]
struct Head<'a> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default, borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow, rename = "sessionId")]
    session_id: Option<std::borrow::Cow<'a, str>>,
}

/// What to do with a client's message.
#[derive(Debug, PartialEq, Eq)]
pub enum ToBrowser {
    /// Send it on as it is.
    Pass,
    /// Send this message instead.
    Rewrite(String),
    /// Send nothing; answer the client with this message.
    Answer(String),
}

/// What to do with a browser's message.
#[derive(Debug, PartialEq, Eq)]
pub enum ToClient {
    /// Pass it on as it is.
    Pass,
    /// Pass this message instead.
    Rewrite(String),
    /// Not for this client.
    Drop,
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

impl Scope {
    /// The guard of incognito context `context`, whose first page is `target`.
    pub fn new(context: String, target: String) -> Self {
        Self { context, targets: HashSet::from([target]), sessions: HashSet::new(), pending: HashMap::new() }
    }

    fn ours(&self, info: Option<&Value>) -> bool {
        info.and_then(|i| i.get("browserContextId")).and_then(Value::as_str) == Some(self.context.as_str())
    }

    /// Judges a text message from the client.
    pub fn judge_client(&mut self, message: &[u8]) -> ToBrowser {
        let Ok(mut command) = serde_json::from_slice::<Value>(message) else {
            return ToBrowser::Answer(answer_error(
                &Value::Null,
                None,
                "the message is not a DevTools command (JSON)",
            ));
        };
        let id = command.get("id").cloned().unwrap_or(Value::Null);
        let method = command.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        if let Some(session) = command.get("sessionId").and_then(Value::as_str) {
            let session = session.to_owned();
            if !self.sessions.contains(&session) {
                let why = format!("`{method}`: no such session on this connection");
                return ToBrowser::Answer(answer_error(&id, Some(&session), &why));
            }
            return match cdp::allowed(&method, command.get("params")) {
                Ok(()) => ToBrowser::Pass,
                Err(why) => ToBrowser::Answer(answer_error(&id, Some(&session), &why)),
            };
        }
        let target = str_at(&command, "/params/targetId").map(str::to_owned);
        let of_ours = target.as_ref().is_some_and(|t| self.targets.contains(t));
        let refuse = |why: String| ToBrowser::Answer(answer_error(&id, None, &why));
        match method.as_str() {
            "Browser.getVersion" | "Target.setDiscoverTargets" => ToBrowser::Pass,
            "Target.getBrowserContexts" => {
                ToBrowser::Answer(answer(&id, json!({"browserContextIds": [self.context]})))
            }
            "Browser.setDownloadBehavior" => ToBrowser::Answer(answer(&id, json!({}))),
            "Target.setAutoAttach" => {
                let params = params_of(&mut command);
                params.insert("waitForDebuggerOnStart".into(), Value::Bool(false));
                params.insert("flatten".into(), Value::Bool(true));
                ToBrowser::Rewrite(command.to_string())
            }
            "Target.getTargets" => {
                self.pending.insert(id.to_string(), Follow::Targets);
                ToBrowser::Pass
            }
            "Target.getTargetInfo" if target.is_none() || of_ours => ToBrowser::Pass,
            "Target.activateTarget" | "Target.closeTarget" if of_ours => ToBrowser::Pass,
            "Target.attachToTarget" if of_ours => {
                params_of(&mut command).insert("flatten".into(), Value::Bool(true));
                self.pending.insert(id.to_string(), Follow::Attached);
                ToBrowser::Rewrite(command.to_string())
            }
            "Target.detachFromTarget"
                if str_at(&command, "/params/sessionId").is_some_and(|s| self.sessions.contains(s)) =>
            {
                ToBrowser::Pass
            }
            "Target.createTarget" => {
                let url = str_at(&command, "/params/url").unwrap_or("about:blank");
                if let Err(why) = cdp::allowed("Page.navigate", Some(&json!({"url": url}))) {
                    return refuse(why.replace("Page.navigate", "Target.createTarget"));
                }
                params_of(&mut command)
                    .insert("browserContextId".into(), Value::String(self.context.clone()));
                self.pending.insert(id.to_string(), Follow::Created);
                ToBrowser::Rewrite(command.to_string())
            }
            _ if target.is_some() && !of_ours => {
                refuse(format!("`{method}`: no such target on this connection"))
            }
            _ => refuse(format!("`{method}` is not available on this session's DevTools connection")),
        }
    }

    /// Judges a text message from the browser.
    pub fn judge_browser(&mut self, message: &[u8]) -> ToClient {
        // Most messages (page events, answers, screenshots of megabytes) are judged by their
        // head alone; only the few the guard learns from are read whole.
        let Ok(head) = serde_json::from_slice::<Head<'_>>(message) else { return ToClient::Pass };
        let whole = || serde_json::from_slice::<Value>(message).unwrap_or_default();
        let target_event = head.method.as_deref().is_some_and(|m| m.starts_with("Target."));
        if let Some(session) = head.session_id.as_deref() {
            if !self.sessions.contains(session) {
                return ToClient::Drop;
            }
            // A worker or frame of this context's page: its own session is this client's too.
            match head.method.as_deref() {
                Some("Target.attachedToTarget") => self.adopt(&whole()),
                Some("Target.detachedFromTarget") => self.forget(&whole()),
                _ => {}
            }
            return ToClient::Pass;
        }
        if let Some(id) = &head.id {
            let Some(follow) = self.pending.remove(&id.to_string()) else { return ToClient::Pass };
            let mut value = whole();
            return match follow {
                Follow::Targets => {
                    let context = self.context.clone();
                    if let Some(Value::Array(list)) = value.pointer_mut("/result/targetInfos") {
                        list.retain(|info| str_at(info, "/browserContextId") == Some(context.as_str()));
                        for info in list.iter() {
                            if let Some(target) = str_at(info, "/targetId") {
                                self.targets.insert(target.to_owned());
                            }
                        }
                    }
                    ToClient::Rewrite(value.to_string())
                }
                Follow::Created => {
                    if let Some(target) = str_at(&value, "/result/targetId") {
                        self.targets.insert(target.to_owned());
                    }
                    ToClient::Pass
                }
                Follow::Attached => {
                    if let Some(session) = str_at(&value, "/result/sessionId") {
                        self.sessions.insert(session.to_owned());
                    }
                    ToClient::Pass
                }
            };
        }
        // Browser-level events: of targets, else downloads and the like, of any context.
        if !target_event {
            return ToClient::Drop;
        }
        let value = whole();
        let params = value.get("params");
        match value.get("method").and_then(Value::as_str).unwrap_or_default() {
            "Target.targetCreated" | "Target.targetInfoChanged" => {
                let info = params.and_then(|p| p.get("targetInfo"));
                if !self.ours(info) {
                    return ToClient::Drop;
                }
                if let Some(target) = info.and_then(|i| str_at(i, "/targetId")) {
                    self.targets.insert(target.to_owned());
                }
                ToClient::Pass
            }
            "Target.attachedToTarget" => {
                if !self.ours(params.and_then(|p| p.get("targetInfo"))) {
                    return ToClient::Drop;
                }
                self.adopt(&value);
                ToClient::Pass
            }
            "Target.detachedFromTarget" => {
                let known = str_at(&value, "/params/sessionId").is_some_and(|s| self.sessions.contains(s));
                if !known {
                    return ToClient::Drop;
                }
                self.forget(&value);
                ToClient::Pass
            }
            "Target.targetDestroyed" | "Target.targetCrashed" => {
                match str_at(&value, "/params/targetId").map(str::to_owned) {
                    Some(target) if self.targets.remove(&target) => ToClient::Pass,
                    _ => ToClient::Drop,
                }
            }
            _ => ToClient::Drop,
        }
    }

    /// Takes the session and target of an `attachedToTarget` event as this client's.
    fn adopt(&mut self, event: &Value) {
        if let Some(session) = str_at(event, "/params/sessionId") {
            self.sessions.insert(session.to_owned());
        }
        if let Some(target) = str_at(event, "/params/targetInfo/targetId") {
            self.targets.insert(target.to_owned());
        }
    }

    fn forget(&mut self, event: &Value) {
        if let Some(session) = str_at(event, "/params/sessionId") {
            self.sessions.remove(session);
        }
    }
}

/// The command's `params` object, made when missing.
fn params_of(command: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !command.get("params").is_some_and(Value::is_object) {
        command["params"] = json!({});
    }
    command["params"].as_object_mut().expect("an object was just put there")
}

fn answer(id: &Value, result: Value) -> String {
    json!({"id": id, "result": result}).to_string()
}

fn answer_error(id: &Value, session: Option<&str>, why: &str) -> String {
    let mut answer = json!({"id": id, "error": {"code": -32000, "message": why}});
    if let Some(session) = session {
        answer["sessionId"] = Value::String(session.to_owned());
    }
    answer.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        Scope::new("CTX".into(), "PAGE".into())
    }

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).expect("json")
    }

    #[test]
    fn another_contexts_targets_and_sessions_stay_hidden() {
        let mut s = scope();
        let attached = |ctx: &str, session: &str, target: &str| {
            json!({"method": "Target.attachedToTarget", "params": {"sessionId": session, "waitingForDebugger": false,
                "targetInfo": {"targetId": target, "browserContextId": ctx, "type": "page"}}})
            .to_string()
        };
        assert_eq!(s.judge_browser(attached("CTX", "S1", "PAGE").as_bytes()), ToClient::Pass);
        assert_eq!(s.judge_browser(attached("OTHER", "S2", "T2").as_bytes()), ToClient::Drop);
        assert_eq!(
            s.judge_browser(br#"{"method":"Page.loadEventFired","sessionId":"S2","params":{}}"#),
            ToClient::Drop
        );
        assert_eq!(
            s.judge_browser(br#"{"method":"Page.loadEventFired","sessionId":"S1","params":{}}"#),
            ToClient::Pass
        );
        // Commands go only to this context's sessions, under the page rules.
        assert_eq!(
            s.judge_client(br#"{"id":1,"sessionId":"S1","method":"Runtime.evaluate","params":{}}"#),
            ToBrowser::Pass
        );
        assert!(matches!(
            s.judge_client(br#"{"id":2,"sessionId":"S2","method":"Runtime.evaluate"}"#),
            ToBrowser::Answer(_)
        ));
        assert!(matches!(
            s.judge_client(br#"{"id":3,"sessionId":"S1","method":"Page.navigate","params":{"url":"file:///etc/passwd"}}"#),
            ToBrowser::Answer(_)
        ));
        // Target lists are cut to this context's.
        assert_eq!(s.judge_client(br#"{"id":4,"method":"Target.getTargets"}"#), ToBrowser::Pass);
        let list = json!({"id": 4, "result": {"targetInfos": [
            {"targetId": "PAGE", "browserContextId": "CTX"}, {"targetId": "T2", "browserContextId": "OTHER"}]}});
        let ToClient::Rewrite(cut) = s.judge_browser(list.to_string().as_bytes()) else { panic!("not cut") };
        assert_eq!(parsed(&cut)["result"]["targetInfos"].as_array().map(Vec::len), Some(1), "{cut}");
        assert!(matches!(
            s.judge_client(br#"{"id":5,"method":"Target.attachToTarget","params":{"targetId":"T2"}}"#),
            ToBrowser::Answer(_)
        ));
        assert!(matches!(
            s.judge_client(br#"{"id":6,"method":"Target.closeTarget","params":{"targetId":"T2"}}"#),
            ToBrowser::Answer(_)
        ));
        assert!(matches!(s.judge_client(br#"{"id":7,"method":"Browser.close"}"#), ToBrowser::Answer(_)));
        assert!(matches!(
            s.judge_client(br#"{"id":8,"method":"Target.createBrowserContext"}"#),
            ToBrowser::Answer(_)
        ));
    }

    #[test]
    fn connecting_clients_get_their_context_only() {
        let mut s = scope();
        let ToBrowser::Rewrite(auto) = s.judge_client(
            br#"{"id":1,"method":"Target.setAutoAttach","params":{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}}"#,
        ) else {
            panic!("not rewritten")
        };
        assert_eq!(parsed(&auto)["params"]["waitForDebuggerOnStart"], false, "{auto}");
        let ToBrowser::Answer(contexts) = s.judge_client(br#"{"id":2,"method":"Target.getBrowserContexts"}"#)
        else {
            panic!("not answered here")
        };
        assert_eq!(parsed(&contexts)["result"]["browserContextIds"], json!(["CTX"]));
        let ToBrowser::Answer(download) = s.judge_client(
            br#"{"id":3,"method":"Browser.setDownloadBehavior","params":{"behavior":"allowAndName","downloadPath":"/tmp"}}"#,
        ) else {
            panic!("downloads reached the browser")
        };
        assert_eq!(parsed(&download)["result"], json!({}));
        let ToBrowser::Rewrite(create) =
            s.judge_client(br#"{"id":4,"method":"Target.createTarget","params":{"url":"about:blank"}}"#)
        else {
            panic!("not rewritten")
        };
        assert_eq!(parsed(&create)["params"]["browserContextId"], "CTX");
        assert_eq!(s.judge_browser(br#"{"id":4,"result":{"targetId":"NEW"}}"#), ToClient::Pass);
        assert_eq!(
            s.judge_client(br#"{"id":5,"method":"Target.closeTarget","params":{"targetId":"NEW"}}"#),
            ToBrowser::Pass
        );
        assert!(matches!(
            s.judge_client(
                br#"{"id":6,"method":"Target.createTarget","params":{"url":"file:///etc/passwd"}}"#
            ),
            ToBrowser::Answer(_)
        ));
    }
}
