// ferrocrawl branding: the page's brand identity from computed styles (spec §2.2).
// Evaluated in the rendered page; returns a plain JSON object.
(() => {
  const doc = document;
  const css = (el) => (el ? getComputedStyle(el) : null);
  const abs = (u) => { try { return u ? new URL(u, doc.baseURI).href : null; } catch (e) { return null; } };
  const parse = (c) => {
    const m = c && c.match(/rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)(?:[,\s/]+([\d.]+%?))?\s*\)/);
    if (!m) return null;
    let a = m[4] === undefined ? 1 : parseFloat(m[4]) / (m[4].endsWith('%') ? 100 : 1);
    return { r: +m[1], g: +m[2], b: +m[3], a };
  };
  const hex = (c) => {
    const p = parse(c);
    if (!p || p.a < 0.1) return null;
    return '#' + [p.r, p.g, p.b].map((v) => Math.round(v).toString(16).padStart(2, '0')).join('').toUpperCase();
  };
  const luminance = (h) => {
    if (!h) return 1;
    const n = parseInt(h.slice(1), 16);
    const ch = [(n >> 16) & 255, (n >> 8) & 255, n & 255].map((v) => {
      v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
    });
    return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2];
  };
  const saturation = (h) => {
    if (!h) return 0;
    const n = parseInt(h.slice(1), 16);
    const [r, g, b] = [(n >> 16) & 255, (n >> 8) & 255, n & 255];
    const max = Math.max(r, g, b), min = Math.min(r, g, b);
    return max === 0 ? 0 : (max - min) / max;
  };
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    const s = css(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none';
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const h = hex(css(e).backgroundColor);
      if (h) return h;
    }
    return '#FFFFFF';
  };
  const family = (el) => {
    const f = el && css(el).fontFamily;
    return f ? f.split(',')[0].trim().replace(/^["']|["']$/g, '') : null;
  };
  const first = (selectors) => {
    for (const s of selectors) {
      for (const el of doc.querySelectorAll(s)) if (visible(el)) return el;
    }
    return null;
  };
  const clean = (o) => {
    if (Array.isArray(o)) return o;
    if (o && typeof o === 'object') {
      const out = {};
      for (const [k, v] of Object.entries(o)) {
        const c = clean(v);
        if (c !== null && c !== undefined && !(typeof c === 'object' && !Array.isArray(c) && Object.keys(c).length === 0)) out[k] = c;
      }
      return out;
    }
    return o;
  };

  // Custom properties declared on :root in readable style sheets (design tokens).
  const tokens = {};
  for (const sheet of Array.from(doc.styleSheets)) {
    let rules;
    try { rules = sheet.cssRules; } catch (e) { continue; }
    for (const rule of Array.from(rules || [])) {
      if (!rule.selectorText || !/(^|,)\s*(:root|html)\s*(,|$)/.test(rule.selectorText)) continue;
      for (const name of Array.from(rule.style)) {
        if (name.startsWith('--')) tokens[name] = getComputedStyle(doc.documentElement).getPropertyValue(name).trim();
      }
    }
  }
  const tokenColor = (words) => {
    for (const [name, value] of Object.entries(tokens)) {
      if (!words.some((w) => name.toLowerCase().includes(w))) continue;
      const probe = doc.createElement('span');
      probe.style.color = value;
      doc.body.appendChild(probe);
      const h = hex(css(probe).color);
      probe.remove();
      if (h) return h;
    }
    return null;
  };

  const body = doc.body;
  const bodyStyle = css(body);
  const pageBackground = background(body);
  const textPrimary = hex(bodyStyle.color);
  const link = first(['main a[href]', 'article a[href]', 'p a[href]', 'a[href]']);
  const buttons = Array.from(doc.querySelectorAll('button, .btn, .button, a[class*="btn"], a[class*="button"], input[type="submit"], [role="button"]')).filter(visible);
  const filled = buttons.filter((b) => hex(css(b).backgroundColor) && hex(css(b).backgroundColor) !== pageBackground);
  const isPrimary = (b) => /primary|cta|main/i.test(b.className + ' ' + (b.id || ''));
  const primaryButton = filled.find(isPrimary) || filled[0] || null;
  const secondaryButton = buttons.find((b) => b !== primaryButton && /secondary|outline|ghost/i.test(b.className))
    || buttons.find((b) => b !== primaryButton) || null;
  const buttonStyle = (b, withBorder) => {
    if (!b) return null;
    const s = css(b);
    const out = { background: hex(s.backgroundColor) || 'transparent', textColor: hex(s.color), borderRadius: s.borderRadius };
    if (withBorder) out.borderColor = hex(s.borderTopColor);
    return out;
  };

  // Text colours other than the main one, most used first.
  const counts = new Map();
  for (const el of Array.from(doc.querySelectorAll('p, span, li, small, figcaption, time, .muted, .text-muted')).slice(0, 400)) {
    if (!visible(el)) continue;
    const h = hex(css(el).color);
    if (h && h !== textPrimary) counts.set(h, (counts.get(h) || 0) + 1);
  }
  const textSecondary = [...counts.entries()].sort((a, b) => b[1] - a[1]).map((e) => e[0])[0] || null;

  const primary = tokenColor(['primary', 'brand']) || (primaryButton && hex(css(primaryButton).backgroundColor)) || (link && hex(css(link).color));
  const saturated = [];
  for (const el of Array.from(doc.querySelectorAll('a, button, h1, h2, h3, nav, header, [class*="badge"], [class*="accent"]')).slice(0, 300)) {
    for (const c of [css(el).backgroundColor, css(el).color]) {
      const h = hex(c);
      if (h && saturation(h) > 0.35 && h !== primary && !saturated.includes(h)) saturated.push(h);
    }
  }
  const secondary = tokenColor(['secondary']) || (secondaryButton && hex(css(secondaryButton).backgroundColor)) || saturated[0] || null;
  const accent = tokenColor(['accent', 'highlight']) || saturated.find((c) => c !== secondary) || null;

  const h1 = first(['h1']), h2 = first(['h2']), h3 = first(['h3']);
  const code = first(['code', 'pre', 'kbd']);
  const weights = new Set();
  for (const el of Array.from(doc.querySelectorAll('body, p, h1, h2, h3, h4, strong, b, a, button, small, span')).slice(0, 400)) {
    weights.add(parseInt(css(el).fontWeight, 10));
  }
  const sortedWeights = [...weights].filter((w) => !isNaN(w)).sort((a, b) => a - b);
  const regular = parseInt(bodyStyle.fontWeight, 10) || 400;
  const lineHeight = (el) => {
    if (!el) return null;
    const s = css(el);
    const lh = parseFloat(s.lineHeight), fs = parseFloat(s.fontSize);
    return isNaN(lh) || !fs ? s.lineHeight : (Math.round((lh / fs) * 100) / 100).toString();
  };
  const fonts = [];
  for (const el of [body, h1, h2, h3, code, primaryButton]) {
    const f = family(el);
    if (f && !fonts.some((x) => x.family === f)) fonts.push({ family: f });
  }

  // Spacing: the most common small padding/margin step.
  const steps = new Map();
  for (const el of Array.from(doc.querySelectorAll('section, div, p, li, button, header, footer, nav')).slice(0, 400)) {
    const s = css(el);
    for (const v of [s.paddingTop, s.paddingLeft, s.marginBottom]) {
      const n = parseFloat(v);
      if (n > 0 && n <= 64) steps.set(n, (steps.get(n) || 0) + 1);
    }
  }
  const values = [...steps.keys()];
  const baseUnit = [4, 8, 6, 5, 10].find((u) => values.length && values.filter((v) => v % u === 0).length >= values.length * 0.6) || 8;
  const section = first(['main section', 'section', 'main', 'article']);
  const container = first(['.container', 'main', '[class*="container"]', 'article']);
  const header = first(['header', 'nav']);
  const input = first(['input[type="text"]', 'input[type="email"]', 'input[type="search"]', 'input:not([type])', 'textarea']);
  const inputStyle = input ? (() => {
    const s = css(input);
    return { background: hex(s.backgroundColor) || 'transparent', textColor: hex(s.color), borderColor: hex(s.borderTopColor), borderRadius: s.borderRadius };
  })() : null;

  const meta = (sel) => { const m = doc.querySelector(sel); return m ? m.getAttribute('content') : null; };
  const iconLink = doc.querySelector('link[rel~="icon"], link[rel="shortcut icon"]');
  const appleIcon = doc.querySelector('link[rel="apple-touch-icon"]');
  const logoEl = first([
    'header img[src*="logo" i]', 'header img[alt*="logo" i]', 'header img[class*="logo" i]',
    'img[src*="logo" i]', 'img[alt*="logo" i]', 'img[class*="logo" i]', '[class*="logo" i] img', '#logo img',
  ]);
  const svgLogo = !logoEl && first(['header [class*="logo" i] svg', '[class*="logo" i] svg', 'header svg']);
  let logo = logoEl ? abs(logoEl.currentSrc || logoEl.getAttribute('src')) : null;
  if (!logo && svgLogo) logo = 'data:image/svg+xml;utf8,' + encodeURIComponent(svgLogo.outerHTML);
  const favicon = abs(iconLink ? iconLink.getAttribute('href') : '/favicon.ico');
  const ogImage = abs(meta('meta[property="og:image"], meta[name="og:image"]'));
  const siteName = meta('meta[property="og:site_name"]') || (doc.title || '').split(/\s[|\-–—]\s/).pop().trim() || null;
  const radius = primaryButton ? parseFloat(css(primaryButton).borderRadius) || 0 : 0;
  const transition = primaryButton ? css(primaryButton).transitionDuration : null;

  return clean({
    colorScheme: luminance(pageBackground) < 0.4 ? 'dark' : 'light',
    brandName: siteName,
    logo,
    colors: {
      primary, secondary, accent,
      background: pageBackground, textPrimary, textSecondary,
      link: link ? hex(css(link).color) : null,
      success: tokenColor(['success', 'positive']),
      warning: tokenColor(['warning', 'caution']),
      error: tokenColor(['error', 'danger', 'destructive']),
    },
    fonts,
    typography: {
      fontFamilies: { primary: family(body), heading: family(h1 || h2) || family(body), code: family(code) },
      fontSizes: { h1: h1 && css(h1).fontSize, h2: h2 && css(h2).fontSize, h3: h3 && css(h3).fontSize, body: bodyStyle.fontSize },
      fontWeights: {
        light: sortedWeights.find((w) => w < 400) || null,
        regular,
        medium: sortedWeights.find((w) => w > regular && w < 600) || null,
        bold: [...sortedWeights].reverse().find((w) => w >= 600) || null,
      },
      lineHeights: { heading: lineHeight(h1 || h2), body: lineHeight(body) },
    },
    spacing: {
      baseUnit,
      borderRadius: primaryButton ? css(primaryButton).borderRadius : (input ? css(input).borderRadius : '0px'),
      padding: { section: section && css(section).padding, button: primaryButton && css(primaryButton).padding },
      margins: { section: section && css(section).margin, paragraph: first(['p']) && css(first(['p'])).marginBottom },
    },
    components: {
      buttonPrimary: buttonStyle(primaryButton, false),
      buttonSecondary: buttonStyle(secondaryButton, true),
      input: inputStyle,
    },
    icons: { favicon, appleTouchIcon: appleIcon ? abs(appleIcon.getAttribute('href')) : null },
    images: { logo, favicon, ogImage },
    animations: { transitionDuration: transition && transition !== '0s' ? transition : null },
    layout: {
      maxWidth: container ? css(container).maxWidth : null,
      headerHeight: header ? Math.round(header.getBoundingClientRect().height) + 'px' : null,
    },
    personality: {
      corners: radius >= 999 || radius > 16 ? 'pill' : radius >= 4 ? 'rounded' : 'sharp',
      theme: luminance(pageBackground) < 0.4 ? 'dark' : 'light',
      colorfulness: saturated.length > 3 ? 'vibrant' : saturated.length > 0 ? 'balanced' : 'muted',
    },
  });
})()
