//! A session's screen as a stream: Chromium's screencast (`Page.startScreencast`) sends a
//! JPEG frame whenever the page's picture changes; each is acknowledged (Chromium sends no
//! more until it is) and handed to every viewer through a broadcast channel. The screencast
//! runs only while someone watches: it stops at the first frame after the last viewer left,
//! and the session's actor starts it again for the next one.

use base64::Engine as _;
use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{
    EventScreencastFrame, ScreencastFrameAckParams, StartScreencastFormat, StartScreencastParams,
    StopScreencastParams,
};
use futures::StreamExt;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;

/// JPEG quality of streamed frames.
const QUALITY: i64 = 60;
/// Frames a slow viewer may fall behind before it skips to the newest.
const BACKLOG: usize = 4;

/// A running screencast.
#[derive(Debug)]
pub struct Screencast {
    frames: broadcast::Sender<bytes::Bytes>,
    task: JoinHandle<()>,
}

impl Screencast {
    /// Starts streaming `page`'s screen; returns it and the first viewer's receiver.
    pub async fn start(page: &Page) -> Result<(Self, broadcast::Receiver<bytes::Bytes>), String> {
        let mut events = page.event_listener::<EventScreencastFrame>().await.map_err(|e| e.to_string())?;
        let (frames, first) = broadcast::channel(BACKLOG);
        let params =
            StartScreencastParams::builder().format(StartScreencastFormat::Jpeg).quality(QUALITY).build();
        page.execute(params).await.map_err(|e| e.to_string())?;
        let (sender, page) = (frames.clone(), page.clone());
        let task = tokio::spawn(async move {
            while let Some(event) = events.next().await {
                let _ = page.execute(ScreencastFrameAckParams::new(event.session_id)).await;
                let Ok(jpeg) =
                    base64::engine::general_purpose::STANDARD.decode(AsRef::<str>::as_ref(&event.data))
                else {
                    continue;
                };
                if sender.send(bytes::Bytes::from(jpeg)).is_err() {
                    // Nobody watches any more.
                    break;
                }
            }
            let _ = page.execute(StopScreencastParams::default()).await;
        });
        Ok((Self { frames, task }, first))
    }

    /// A receiver for one more viewer, while the screencast runs.
    pub fn watch(&self) -> Option<broadcast::Receiver<bytes::Bytes>> {
        (!self.task.is_finished()).then(|| self.frames.subscribe())
    }
}

impl Drop for Screencast {
    fn drop(&mut self) {
        self.task.abort();
    }
}
