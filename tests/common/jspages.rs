//! Pages of the fixture site that only a browser shows correctly: content written by
//! scripts (late, after a fetch, in an app shell), an interactive page for actions, a
//! page that reports what the browser emulates, ad and cookie pages, and a styled page
//! for branding.

/// A static page whose news appears 300 ms after load, written by a script.
pub const JS_LATE: &str = r#"<!DOCTYPE html><html><head><title>Late page</title></head><body>
<h1>Village notices</h1>
<p>The village hall is open on weekdays from nine until five. Bookings for the spring fair,
the allotment society and the choir are taken at the front desk or by telephone. Parking is
free behind the church, and the bus stops outside the post office every half hour.</p>
<div id="news"></div>
<script>
setTimeout(() => {
  document.getElementById('news').innerHTML = '<h1>Rendered by script</h1><p>The harvest festival starts on Saturday with music and cider.</p>';
}, 300);
</script></body></html>"#;

/// An app shell: the HTML holds nothing; the content comes from /api/content.
pub const APP_SHELL: &str = r#"<!DOCTYPE html><html><head><title>Shell</title></head><body>
<noscript>You need to enable JavaScript to run this app.</noscript>
<div id="root"></div>
<script>
fetch('/api/content').then((r) => r.json()).then((data) => {
  document.getElementById('root').innerHTML = '<article><h1>' + data.title + '</h1><p>' + data.body + '</p></article>';
});
</script></body></html>"#;

/// An app behind a server-rendered header, menu and cookie banner: the content area says
/// "Loading..." until an inline script fills it.
pub const HEADED_SHELL: &str = r#"<!DOCTYPE html><html><head><title>Seed shop</title></head><body>
<header class="site-header"><a href="/">Seed Shop</a> <a href="/account">My account</a></header>
<nav><a href="/seeds">Seeds</a> <a href="/tools">Tools</a> <a href="/offers">Offers</a> <a href="/help">Help</a></nav>
<div id="cookie" class="cookie cookie-banner">We use cookies to run this shop and to count visits. <button>Accept all</button></div>
<div id="app">Loading...</div>
<script>
setTimeout(() => {
  document.getElementById('app').innerHTML = '<main><h1>Tomato seeds</h1><p>Twelve heirloom varieties, sown from March to May under glass.</p></main>';
}, 50);
</script>
<footer>Seed Shop Ltd, 2026</footer></body></html>"#;

/// JSON behind the app shell.
pub const APP_CONTENT: &str =
    r#"{"title": "Fetched headline", "body": "Seedlings need sixteen hours of light a day."}"#;

/// An interactive page for actions.
pub const INTERACTIVE: &str = r#"<!DOCTYPE html><html><head><title>Interactive</title>
<style>body { margin: 0; } .tall { height: 3000px; background: linear-gradient(#fff, #9cf); }</style></head><body>
<h1 id="title">Interactive page</h1>
<button id="more" onclick="document.getElementById('list').insertAdjacentHTML('beforeend', '<li>Loaded item ' + (document.querySelectorAll('#list li').length + 1) + '</li>')">Load more</button>
<button class="tick" onclick="this.textContent='ticked'">tick</button><button class="tick" onclick="this.textContent='ticked'">tick</button>
<ul id="list"></ul>
<input id="search" type="text" onkeydown="if (event.key === 'Enter') document.getElementById('result').textContent = 'Searched for ' + this.value">
<p id="result"></p>
<div id="scrolled"></div>
<div class="tall"></div>
<script>
window.addEventListener('scroll', () => { document.getElementById('scrolled').textContent = 'Scrolled to ' + Math.round(window.scrollY); });
setTimeout(() => document.body.insertAdjacentHTML('beforeend', '<div id="late">Late element</div>'), 500);
</script></body></html>"#;

/// Reports what the browser emulates.
pub const PROBE: &str = r#"<!DOCTYPE html><html><head><title>Probe</title></head><body>
<p id="out"></p>
<script>
document.getElementById('out').textContent = [
  'lang=' + navigator.language,
  'tz=' + Intl.DateTimeFormat().resolvedOptions().timeZone,
  'width=' + window.innerWidth,
  'screen=' + screen.width,
  'touch=' + navigator.maxTouchPoints,
  'mobileua=' + /Mobile/.test(navigator.userAgent),
  'cookie=' + document.cookie,
].join(' ');
</script></body></html>"#;

/// Loads an "ad" from an ad-script path and shows a consent banner.
pub const ADS: &str = r#"<!DOCTYPE html><html><head><title>Ads</title></head><body>
<div id="onetrust-banner-sdk">We value your privacy. Accept cookies to continue.</div>
<main><h1>Weather today</h1><p>Sunny with a light breeze from the west all afternoon.</p></main>
<div id="ad-slot"></div>
<script src="/pagead/show_ads.js"></script>
</body></html>"#;

/// The "ad" script.
pub const AD_SCRIPT: &str = "document.getElementById('ad-slot').innerHTML = '<p>BUY CHEAP WIDGETS NOW</p>';";

/// Sets a cookie and local storage the first time, shows them afterwards.
pub const MEMORY: &str = r#"<!DOCTYPE html><html><head><title>Memory</title></head><body>
<p id="out"></p>
<script>
const seen = document.cookie.includes('visited=yes');
const stored = localStorage.getItem('theme');
document.getElementById('out').textContent = seen ? ('returning visitor, theme ' + stored) : 'first visit';
document.cookie = 'visited=yes; max-age=86400; path=/';
localStorage.setItem('theme', 'dark');
</script></body></html>"#;

/// A page with a distinct brand identity.
pub const STYLED: &str = r##"<!DOCTYPE html><html><head><title>Acme Seeds | Home</title>
<meta property="og:site_name" content="Acme Seeds">
<meta property="og:image" content="/img/og-acme.png">
<link rel="icon" href="/favicon-acme.png">
<style>
:root { --color-primary: #2E7D32; --color-accent: #FFB300; --color-error: #C62828; }
body { background: #FAFAF5; color: #212121; font-family: "Georgia", serif; font-size: 18px; line-height: 1.6; margin: 0; }
h1 { font-family: "Trebuchet MS", sans-serif; font-size: 48px; font-weight: 800; line-height: 1.1; }
h2 { font-size: 32px; }
code { font-family: "Courier New", monospace; }
a { color: #1565C0; }
.btn-primary { background: #2E7D32; color: #FFFFFF; border-radius: 8px; padding: 12px 24px; border: none; }
.btn-secondary { background: transparent; color: #2E7D32; border: 2px solid #2E7D32; border-radius: 8px; padding: 12px 24px; }
header { height: 64px; }
</style></head><body>
<header><img class="logo" src="/img/acme-logo.png" alt="Acme logo" width="120" height="40"></header>
<main><h1>Seeds that grow</h1><h2>Our range</h2><p>Heirloom varieties, tested in <a href="/trials">our trials</a>. Use <code>ACME10</code> for ten percent off.</p>
<button class="btn-primary">Shop now</button> <button class="btn-secondary">Learn more</button></main>
</body></html>"##;

/// Asks for a resource on another loopback name (`localhost`), which the address policy
/// may refuse even when the page's own host is allowed.
pub const LEAK: &str = r#"<!DOCTYPE html><html><head><title>Leak</title></head><body>
<p id="out">waiting</p>
<script>
fetch('http://localhost:' + location.port + '/api/content')
  .then((r) => (r.ok ? 'leaked' : 'refused ' + r.status))
  .catch(() => 'refused')
  .then((t) => { document.getElementById('out').textContent = t; });
</script></body></html>"#;

/// Reports what earlier visits left in the browser (cookies, local and session storage,
/// the window's name, a service worker, cache storage, history), then leaves all of that, and an HTTP-cached
/// file, for the next visit.
pub const STATEFUL: &str = r#"<!DOCTYPE html><html><head><title>Stateful</title></head><body>
<h1>What this visit found</h1><p id="out">waiting</p>
<script>
(async () => {
  const found = [];
  if (document.cookie) found.push('cookie ' + document.cookie);
  if (localStorage.getItem('visit')) found.push('local storage');
  if (sessionStorage.getItem('visit')) found.push('session storage');
  if (window.name) found.push('window name ' + window.name);
  if ((await navigator.serviceWorker.getRegistrations()).length) found.push('service worker');
  if (await caches.has('visit')) found.push('cache storage');
  // A fresh tab has two entries: its blank page and this one.
  if (history.length > 2) found.push('history ' + history.length);
  document.cookie = 'visit=1; max-age=3600; path=/';
  localStorage.setItem('visit', '1');
  sessionStorage.setItem('visit', '1');
  window.name = 'visit';
  await (await caches.open('visit')).put('/js/kept', new Response('kept'));
  await navigator.serviceWorker.register('/js/sw.js');
  await fetch('/js/cached.txt');
  document.getElementById('out').textContent =
    'Left by earlier visits: ' + (found.join(', ') || 'nothing') + '. Left for the next: all.';
})().catch((e) => { document.getElementById('out').textContent = 'failed: ' + e; });
</script></body></html>"#;

/// A service worker that does nothing but exist.
pub const SERVICE_WORKER: &str = "self.addEventListener('fetch', () => {});";

/// The page for `path`, if it is one of these.
pub fn page(path: &str) -> Option<(&'static str, &'static str)> {
    let html = "text/html; charset=utf-8";
    Some(match path {
        "/js/late" => (html, JS_LATE),
        "/js/shell" => (html, APP_SHELL),
        "/js/headed-shell" => (html, HEADED_SHELL),
        "/api/content" => ("application/json", APP_CONTENT),
        "/js/interactive" => (html, INTERACTIVE),
        "/js/probe" => (html, PROBE),
        "/js/ads" => (html, ADS),
        "/pagead/show_ads.js" => ("application/javascript", AD_SCRIPT),
        "/js/memory" => (html, MEMORY),
        "/js/styled" => (html, STYLED),
        "/js/leak" => (html, LEAK),
        "/js/stateful" => (html, STATEFUL),
        "/js/sw.js" => ("application/javascript", SERVICE_WORKER),
        _ => return None,
    })
}
