/**
 * Key names whose values are secrets, matched on the name lower-cased without `-`, `_`
 * and `.`, anchored at its end: `accessToken`, `api_token`, `x-api-key`, `clientSecret`,
 * `privateKey`, `passwd`, `Authorization`, `set-cookie` match; `inputTokens`, `maxTokens`,
 * `author`, `sessionId` do not.
 */
export const SECRET_KEY = /(?:password|passwd|passphrase|secret|token|apikey|privatekey|secretkey|accesskey|signingkey|credentials?|auth|authorization|bearer|cookies?|setcookie|sessionkey|^pin|pincode|passcode|cvv|accountkey|connectionstring)$/;

/** What a redacted value is replaced with. */
export const REDACTED = '[Redacted]';

/** Shapes of secrets inside text, each replaced in place; the first group (if any) is kept. */
export const SECRET_VALUE_PATTERNS: readonly RegExp[] = [
  // PEM private keys: the whole block, or from its BEGIN line to the end of a piece that holds no END.
  /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)/g,
  // Credentials in a URL: scheme://user:password@host keeps the user and the host.
  /(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s/@]+(?=@)/gi,
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
  /((?<![A-Za-z0-9])(?:(["'])(?:[a-z]+[-_])*(?:password|passwd|secret|secret[-_]access[-_]key|api[-_]?key|access[-_]?token|refresh[-_]?token|token|authorization|pin|session[-_]?id)\2|(?:[a-z]+[-_])*(?:password|passwd|secret|secret[-_]access[-_]key|api[-_]?key|access[-_]?token|refresh[-_]?token|token|authorization|pin|session[-_]?id))\s*[:=]?\s*["']?)(?!\[Redacted\]|Bearer\b|Basic\b)(?=[^\s"'&,;}]*\d)[^\s"'&,;}]{4,}/gi,
  // Long hex tokens (32+ hex digits, not a UUID's groups) and long mixed-case base64 tokens.
  /\b[0-9a-f]{32,}\b/gi,
  // Bounded (4,096 characters), so a huge run of letters (a 100 kB result) cannot overflow the regexp engine's stack.
  /(?<![A-Za-z0-9+/=_-])(?=[A-Za-z0-9+/=_-]{0,4096}[0-9])(?=[A-Za-z0-9+/=_-]{0,4096}[a-z])(?=[A-Za-z0-9+/=_-]{0,4096}[A-Z])[A-Za-z0-9+/_-]{40,4096}={0,2}(?![A-Za-z0-9+/=_-])/g,
];
