/**
 * Key names whose values are secrets, matched on the name lower-cased without `-`, `_`
 * and `.`, anchored at its end: `accessToken`, `api_token`, `x-api-key`, `clientSecret`,
 * `privateKey`, `passwd`, `Authorization`, `set-cookie` match; `inputTokens`, `maxTokens`,
 * `author`, `sessionId` do not.
 */
export const SECRET_KEY =
  /(?:password|passwd|passphrase|secret|token|apikey|privatekey|secretkey|accesskey|signingkey|credentials?|auth|authorization|bearer|cookies?|setcookie|sessionkey|^pin|pincode|passcode|cvv|accountkey|connectionstring)$/;

/** What a redacted value is replaced with. */
export const REDACTED = '[Redacted]';

/** Shapes of secrets inside text, each replaced in place; the first group (if any) is kept. */
export const SECRET_VALUE_PATTERNS: readonly RegExp[] = [
  // PEM private keys: the whole block, or from its BEGIN line to the end of a piece that holds no END.
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  // Credentials in a URL: scheme://user:password@host keeps the user and the host.
  /(\b[a-z][a-z0-9+.-]{0,31}:\/\/[^\s:/@]+:)[^\s/@]+(?=@)/gi,
  // Connection strings and cookies: AccountKey=…, SharedAccessKey=…, Cookie: a=…; b=…
  /((?:AccountKey|SharedAccessKey|SharedAccessSignature|sig|Password|Pwd)=)[^;\s"']+/gi,
  /(\b(?:Set-)?Cookie:\s*)[^\r\n"]+/gi,
  // Authorization header values.
  /\b(Bearer\s+)[A-Za-z0-9._~+/=-]{8,}/gi,
  /\b(Basic\s+)[A-Za-z0-9+/=]{12,}/g,
  // JSON Web Tokens: two base64url JSON parts and a signature.
  /\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}/g,
  // Vendor API keys by prefix: OpenAI/Anthropic (sk-, sk-proj-, sk-ant-), Stripe, GitHub, GitLab, Slack, AWS, Google, npm.
  /\bsk-[A-Za-z0-9_-]{16,}/g,
  /\b[rsp]k_(?:live|test)_[A-Za-z0-9]{10,}/g,
  /\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})/g,
  /\bglpat-[A-Za-z0-9_-]{20,}/g,
  /\bxox[abposr]-[A-Za-z0-9-]{10,}/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bAIza[0-9A-Za-z_-]{35}/g,
  /\bnpm_[A-Za-z0-9]{36}\b/g,
  // `password=…`, `"api_key": "…"`, `token: …` written out in text, URLs and echoed JSON. A quote
  // after the name counts only with its opening quote right before it: in `'vault.token': merge`
  // (an install error naming a key) the quotes hold a longer name, and `merge` is no secret.
  // Every repetition is bounded (a prefix of at most four words, a digit within 256 characters
  // of the value): unbounded, `db_password` repeated 100,000 times took cubic time. An unquoted
  // name needs no prefix: the match starts at the key word itself, after the `_` or `-`.
  /((?<![A-Za-z0-9])(?:(["'])(?:[a-z]{1,32}[-_]){0,4}(?:password|passwd|secret|secret[-_]access[-_]key|api[-_]?key|access[-_]?token|refresh[-_]?token|token|authorization|pin|session[-_]?id)\2|(?:password|passwd|secret|secret[-_]access[-_]key|api[-_]?key|access[-_]?token|refresh[-_]?token|token|authorization|pin|session[-_]?id))\s{0,8}[:=]?\s{0,8}["']?)(?!\[Redacted\]|Bearer\b|Basic\b)(?=[^\s"'&,;}]{0,256}\d)[^\s"'&,;}]{4,}/gi,
  // Long hex tokens (32+ hex digits, not a UUID's groups). Long mixed-case base64 tokens are
  // found by `isMixedCaseToken` over each run of token characters: a regexp with lookaheads over
  // the run backtracks quadratically on a long run (a 1 MB result), a scan of runs does not.
  /\b[0-9a-f]{32,}\b/gi,
];

/**
 * Every maximal run of base64 / base64url characters (and `=` padding) in a text that is long
 * enough to be a token: {@link isMixedCaseToken} takes none shorter than 40 characters, so
 * shorter runs (every ordinary word) are not matched, and a text without a long run is
 * scanned without allocating a string per word. At most 40 steps per start: linear.
 */
export const TOKEN_RUN = /[A-Za-z0-9+/=_-]{40,}/g;

/** Longest token `isMixedCaseToken` takes for a secret: a longer run is data (an image's base64), not a key. */
export const MAX_TOKEN_LENGTH = 4096;

/**
 * Whether one whole run of {@link TOKEN_RUN} is a long mixed-case token: 40 to 4,096
 * characters of `[A-Za-z0-9+/_-]` holding a digit, a lower-case and an upper-case letter,
 * then at most two `=`. Linear in the run's length.
 */
export function isMixedCaseToken(run: string): boolean {
  let end = run.length;
  while (end > 0 && run.charCodeAt(end - 1) === 61 /* = */ && run.length - end < 2) end--;
  if (end < 40 || end > MAX_TOKEN_LENGTH) return false;
  let digit = false;
  let lower = false;
  let upper = false;
  for (let i = 0; i < end; i++) {
    const c = run.charCodeAt(i);
    if (c === 61) return false;
    if (c >= 48 && c <= 57) digit = true;
    else if (c >= 97 && c <= 122) lower = true;
    else if (c >= 65 && c <= 90) upper = true;
  }
  return digit && lower && upper;
}
