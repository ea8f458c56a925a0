/** HTML that is safe to put in a page as is: built by {@link html}, every interpolated value escaped. */
export class SafeHtml {
  constructor(private readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** `text` with `& < > " '` escaped, fit for element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/**
 * A template tag that escapes every interpolated value unless it is already {@link SafeHtml};
 * arrays are joined, `null`/`undefined`/`false` render as nothing. Model and tool text can
 * therefore only ever reach a page as text: the one way to emit markup is a literal template.
 *
 * @example
 * html`<li>${message.content}</li>` // '<script>' becomes '&lt;script&gt;'
 */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0]!;
  values.forEach((value, i) => {
    out += render(value) + strings[i + 1]!;
  });
  return new SafeHtml(out);
}

function render(value: unknown): string {
  if (value instanceof SafeHtml) return value.toString();
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}
