/**
 * Characters a terminal acts on instead of showing: C0 controls but line feed and tab
 * (ESC starts colour, cursor-movement and clear-screen sequences; CR and BS overwrite),
 * DEL, C1 controls (U+009B is a one-byte CSI), and the bidirectional overrides and
 * isolates that reorder what is shown ("Trojan Source").
 */
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Text safe to print: every control character becomes a visible escape (`\x1b`,
 * `\u202e`), so what a person reads is exactly what is there — nothing hidden, recoloured
 * or overwritten. Line feeds and tabs stay.
 *
 * @example
 * escapeControl('DROP\u001b[2K TABLE') // 'DROP\\x1b[2K TABLE'
 */
export function escapeControl(text: string): string {
  return text.replace(CONTROL, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}
