import type { PluginCatalog } from '../../plugin/plugin-catalog.js';
import { schemaSummary } from '../../validation/schema-summary.js';
import { html, type SafeHtml } from './safe-html.js';

/** The `#main` region of the plugins page: what `trellis plugins` prints, from the same catalog. */
export function pluginsMain(catalog: PluginCatalog): SafeHtml {
  return html`<section class="plugins"><h1>Plugins</h1>
${catalog.plugins.length === 0 ? html`<p class="empty">No plugins installed.</p>` : ''}
${catalog.plugins.map(
    (p) => html`<article class="plugin" data-plugin="${p.name}">
<h2>${p.name} <small>${p.version}</small>${p.enabled ? '' : html` <span class="status s-other">disabled</span>`}</h2>
${p.description ? html`<p>${p.description}</p>` : ''}
${p.tools.length > 0 ? html`<h3>Tools</h3><table class="tools"><thead><tr><th>Tool</th><th>Input</th><th>Middleware</th><th>Requires</th></tr></thead><tbody>${p.tools.map(
      (t) => html`<tr><td><b>${t.name}</b><div class="desc">${t.description}</div></td><td><code>${schemaSummary(t.schema)}</code><details><summary>JSON schema</summary><pre>${JSON.stringify(t.schema, null, 2)}</pre></details></td><td>${t.middleware.length > 0 ? t.middleware.join(' → ') : 'none'}</td><td>${t.requires.join(', ') || '—'}</td></tr>`,
    )}</tbody></table>` : ''}
${p.hooks.length > 0 ? html`<h3>Hooks</h3><ul>${p.hooks.map((h) => html`<li><code>${h.point}</code> priority ${h.priority} → ${h.method}${h.requires.length > 0 ? html` (requires ${h.requires.join(', ')})` : ''}</li>`)}</ul>` : ''}
${p.stateKeys.length > 0 ? html`<h3>State keys</h3><ul>${p.stateKeys.map((k) => html`<li><code>${k.key}</code> ${k.scope}, ${k.merge}${k.persistent ? ', persistent' : ''}</li>`)}</ul>` : ''}
<p class="meta">Context keys declared: ${p.requires.length > 0 ? p.requires.join(', ') : 'none'}</p>
</article>`,
  )}
<h2>Hooks by point, in run order</h2>
${catalog.hookOrder.length === 0 ? html`<p class="empty">(none)</p>` : html`<table class="hook-order"><tbody>${catalog.hookOrder.map((p) => html`<tr><td><code>${p.point}</code></td><td>${p.hooks.map((h) => `${h.plugin}.${h.method} (${h.priority})`).join(', ')}</td></tr>`)}</tbody></table>`}
</section>`;
}
