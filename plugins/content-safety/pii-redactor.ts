import { compilePattern } from '../permissions/regex-pattern.js';
import type { ContentSafetyConfig } from './content-safety.config.js';

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
/**
 * A run of digit groups as people write phone and card numbers: `+1 (555) 123-4567`,
 * `4111 1111 1111 1111`. After the first, groups have two digits or more, so lists of
 * single digits and version numbers are not runs.
 */
const NUMBER_RUN = /(?<![\w+])(?:\+\d{1,3}|\(\d{1,4}\)|\d+)(?:[ .-]?(?:\(\d{1,4}\)|\d{2,}))*(?!\w)/g;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;

/** Replacements of the built-in kinds. */
export const REDACTED = { email: '[REDACTED:email]', phone: '[REDACTED:phone]', card: '[REDACTED:card]' } as const;

/** Whether the digits pass the Luhn checksum that card numbers carry. */
export function passesLuhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}

/**
 * Redacts personal data from text: first the configured extra patterns, then e-mail
 * addresses, card numbers (13–19 digits passing Luhn; a number that fails is left
 * alone), phone numbers (`+` and 8–15 digits; 7–12 digits written with separators; or a
 * bare 10–11 digits; ISO dates are not phones).
 *
 * @example
 * new PiiRedactor(config).redact('mail a@b.io') // 'mail [REDACTED:email]'
 */
export class PiiRedactor {
  private readonly extra: readonly { readonly pattern: RegExp; readonly replacement: string }[];

  constructor(
    private readonly config: Pick<
      ContentSafetyConfig,
      'redactEmails' | 'redactPhones' | 'redactCards' | 'redactPatterns'
    >,
  ) {
    this.extra = config.redactPatterns.map((p) => ({
      pattern: global(compilePattern(p.matches, p.flags)),
      replacement: p.replacement ?? `[REDACTED:${p.name}]`,
    }));
  }

  redact(text: string): string {
    let out = text;
    // Configured patterns first: they are more specific than the built-in heuristics.
    for (const { pattern, replacement } of this.extra) out = out.replace(pattern, replacement);
    if (this.config.redactEmails) out = out.replace(EMAIL, REDACTED.email);
    if (this.config.redactCards || this.config.redactPhones) out = out.replace(NUMBER_RUN, (run) => this.number(run));
    return out;
  }

  private number(run: string): string {
    const digits = run.replace(/\D/g, '');
    if (this.config.redactCards && digits.length >= 13 && digits.length <= 19 && passesLuhn(digits))
      return REDACTED.card;
    if (!this.config.redactPhones || ISO_DATE.test(run)) return run;
    if (run.startsWith('+')) return digits.length >= 8 && digits.length <= 15 ? REDACTED.phone : run;
    // A bare run of digits is more often an id than a phone: only 10–11 of them count.
    const written = digits.length !== run.length;
    return (written && digits.length >= 7 && digits.length <= 12) || digits.length === 10 || digits.length === 11
      ? REDACTED.phone
      : run;
  }
}

function global(pattern: RegExp): RegExp {
  return new RegExp(pattern.source, `${pattern.flags}g`);
}
