import type { AppDescription } from '../../../../index.js';
import { schemaSummary } from '../../../engine/validation/schema-summary.js';
import { html, type SafeHtml } from './safe-html.js';

/** The `#main` region of the plugins page: what `trellis plugins` prints, from the same `app.describe()`. */
export function pluginsMain(catalog: AppDescription): SafeHtml {
  return html`<section class="plugins"><h1>Plugins</h1>
${catalog.plugins.length === 0 ? html`<p class="empty">No plugins installed.</p>` : ''}
${catalog.plugins.map(
  (p) => html`<article class="plugin" data-plugin="${p.name}">
<h2>${p.name} <small>${p.version}</small>${p.enabled ? '' : html` <span class="status s-other">disabled</span>`}</h2>
${p.description ? html`<p>${p.description}</p>` : ''}
${
  p.tools.length > 0
    ? html`<h3>Tools</h3><table class="tools"><thead><tr><th>Tool</th><th>Input</th><th>Middleware</th><th>Requires</th></tr></thead><tbody>${p.tools.map(
        (t) =>
          html`<tr><td><b>${t.name}</b><div class="desc">${t.description}</div></td><td><code>${schemaSummary(t.inputSchema)}</code><details><summary>JSON schema</summary><pre>${JSON.stringify(t.inputSchema, null, 2)}</pre></details></td><td>${t.middleware.length > 0 ? t.middleware.join(' → ') : 'none'}</td><td>${t.requires.map(keyLabel).join(', ') || '—'}</td></tr>`,
      )}</tbody></table>`
    : ''
}
${p.hooks.length > 0 ? html`<h3>Hooks</h3><ul>${p.hooks.map((h) => html`<li><code>${h.point}</code> priority ${h.priority} → ${h.method}</li>`)}</ul>` : ''}
${p.stateKeys.length > 0 ? html`<h3>State keys</h3><ul>${p.stateKeys.map((k) => html`<li><code>${k.key}</code> ${k.scope}, ${k.merge}${k.persistent ? ', persistent' : ''}</li>`)}</ul>` : ''}
<p class="meta">Context keys its tools declare: ${contextKeys(p).join(', ') || 'none'}</p>
</article>`,
)}
<h2>Hooks by point, in run order</h2>
${catalog.hookOrder.length === 0 ? html`<p class="empty">(none)</p>` : html`<table class="hook-order"><tbody>${catalog.hookOrder.map((p) => html`<tr><td><code>${p.point}</code></td><td>${p.handlers.map((h) => `${h.plugin}.${h.method} (${h.priority})`).join(', ')}</td></tr>`)}</tbody></table>`}
</section>`;
}

function keyLabel(key: { readonly key: string; readonly optional: boolean }): string {
  return key.optional ? `${key.key}?` : key.key;
}

function contextKeys(plugin: AppDescription['plugins'][number]): string[] {
  return [...new Set(plugin.tools.flatMap((t) => t.requires.map(keyLabel)))].sort();
}
