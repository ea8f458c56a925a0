import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { IsString } from 'class-validator';
import { Secret } from '../../../decorators/secret.decorator.js';
import { isSecretKey, redactSecrets, redactText } from '../../../src/redaction/redactor.js';

describe('secret key names, case-insensitively, at any depth', () => {
  it.each([
    'accessToken',
    'clientSecret',
    'api_token',
    'x-api-key',
    'X-API-KEY',
    'sessionToken',
    'privateKey',
    'passwd',
    'auth',
    'Authorization',
    'bearer',
    'cookie',
    'Set-Cookie',
    'password',
    'refresh_token',
    'awsSecretAccessKey',
    'credentials',
  ])('%s is secret', (key) => {
    expect(isSecretKey(key)).toBe(true);
  });

  it.each(['inputTokens', 'outputTokens', 'maxTokens', 'author', 'sessionId', 'tool', 'key', 'message', 'tokenizer'])(
    '%s is not',
    (key) => {
      expect(isSecretKey(key)).toBe(false);
    },
  );

  it('redacts nested objects and arrays and leaves the original alone', () => {
    const input = {
      a: [{ deep: { b: { accessToken: 't0ken-value' } } }],
      headers: { 'x-api-key': 'k1' },
      usage: { inputTokens: 5 },
    };
    expect(redactSecrets(input)).toEqual({
      a: [{ deep: { b: { accessToken: '[Redacted]' } } }],
      headers: { 'x-api-key': '[Redacted]' },
      usage: { inputTokens: 5 },
    });
    expect(input.headers['x-api-key']).toBe('k1');
  });

  it('survives cycles and 10,000 levels of nesting without overflowing the stack', () => {
    const cyclic: Record<string, unknown> = { name: 'a' };
    cyclic.self = cyclic;
    expect(redactSecrets(cyclic)).toEqual({ name: 'a', self: '[Circular]' });
    let deep: unknown = { password: 'x' };
    for (let i = 0; i < 10_000; i++) deep = { next: deep };
    expect(() => redactSecrets(deep)).not.toThrow();
  });
});

describe('secret values by shape, inside any text', () => {
  it.each([
    ['Authorization: Bearer abcdefghijklmnop.qrs', 'Authorization: Bearer [Redacted]'],
    ['key sk-proj-abcdefghijklmnopqrstuvwx1234 was rejected', 'key [Redacted] was rejected'],
    ['Incorrect API key provided: sk-ant-api03-AAAAAAAAAAAAAAAAAAAA.', 'Incorrect API key provided: [Redacted].'],
    ['token ghp_abcdefghijklmnopqrstuvwxyz0123456789', 'token [Redacted]'],
    ['slack xoxb-123456789012-abcdefghijkl', 'slack [Redacted]'],
    ['aws AKIAIOSFODNN7EXAMPLE here', 'aws [Redacted] here'],
    [
      'jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U',
      'jwt [Redacted]',
    ],
    ['GET /v1?api_key=abcd1234efgh&x=1', 'GET /v1?api_key=[Redacted]&x=1'],
    ['{"password": "hunter22"}', '{"password": "[Redacted]"}'],
  ])('%s', (text, expected) => {
    expect(redactText(text)).toBe(expected);
  });

  it("leaves a quoted name that ends in a secret word alone: an install error's 'vault.token': merge", () => {
    const text = "Plugin Vault is invalid:\n- state key 'vault.token': merge must be exclusive or commutative";
    expect(redactText(text)).toBe(text);
    expect(redactText("{'api_key': 'abcd1234efgh'}")).toBe("{'api_key': '[Redacted]'}");
    expect(redactText('token: abcd1234efgh')).toBe('token: [Redacted]');
    expect(redactText('vault.token=abcd1234efgh')).toBe('vault.token=[Redacted]');
  });

  it('leaves ordinary text alone', () => {
    const text = 'SELECT name FROM customers; max_tokens: 100; 4 tokens used; sk is short';
    expect(redactText(text)).toBe(text);
  });

  it('takes a mixed-case run for a token from 40 characters, as a word among others, twice in one text', () => {
    const token = (n: number) => 'xY7'.repeat(Math.ceil(n / 3)).slice(0, n); // not hex, so only the token rule applies
    expect(redactText(`id ${token(39)} ok`)).toBe(`id ${token(39)} ok`);
    expect(redactText(`id ${token(40)} ok`)).toBe('id [Redacted] ok');
    expect(redactText(`a ${token(41)}== b ${token(60)}`)).toBe('a [Redacted] b [Redacted]');
    expect(redactText(`${'x'.repeat(39)} ${token(45)}`)).toBe(`${'x'.repeat(39)} [Redacted]`);
    // Called again on the same text: the patterns' state does not leak from one call into the next.
    expect(redactText(`k ${token(40)}`)).toBe('k [Redacted]');
    expect(redactText(`k ${token(40)}`)).toBe('k [Redacted]');
  });
});

describe('@Secret() DTO fields', () => {
  class Login {
    @IsString() user!: string;
    @Secret() @IsString() pin!: string;
  }
  class AdminLogin extends Login {
    @Secret() @IsString() otp!: string;
  }

  it('are redacted on instances, including inherited ones, and by name on plain arguments', () => {
    const login = Object.assign(new AdminLogin(), { user: 'ada', pin: '1234', otp: '999999' });
    expect(redactSecrets({ input: login })).toEqual({ input: { user: 'ada', pin: '[Redacted]', otp: '[Redacted]' } });
    expect(redactSecrets({ user: 'ada', pin: '1234' }, { topLevelSecrets: ['pin'] })).toEqual({
      user: 'ada',
      pin: '[Redacted]',
    });
  });
});

describe('redaction costs linear time on hostile text', () => {
  // Each text is about 1 MB. They run in a child process with a deadline: a regexp that
  // backtracks catastrophically never yields, and in this process it would hang the suite
  // instead of failing it.
  const HOSTILE: Record<string, string> = {
    letters: 'x'.repeat(1_000_000),
    'key names without values': 'db_password'.repeat(100_000),
    'quoted key names with prefixes': '"a_b_token'.repeat(100_000),
    'key names and blanks': `password${' '.repeat(1_000_000)}`,
    'Bearer without a token': 'Bearer '.repeat(150_000),
    'JWT-looking prefixes': 'eyJaaaaa.'.repeat(110_000),
    'key prefixes': 'sk-'.repeat(300_000),
    'scheme-like runs': 'ab.'.repeat(330_000),
    pairs: 'token=abcd&'.repeat(90_000),
    'one mixed-case run': 'aB3'.repeat(330_000),
    'token runs': 'aB3'.repeat(20).concat(' ').repeat(8_000),
  };

  it('every 1 MB text is redacted in seconds at most, not minutes (no catastrophic backtracking)', () => {
    const script = `
      const { redactText } = await import(${JSON.stringify(new URL('../../../src/redaction/redactor.ts', import.meta.url).pathname)});
      const texts = JSON.parse(require('node:fs').readFileSync(0, 'utf8'));
      const ms = {};
      for (const [name, text] of Object.entries(texts)) { const t = performance.now(); redactText(text); ms[name] = Math.round(performance.now() - t); }
      console.log(JSON.stringify(ms));`.replace(
      'require(',
      "(await import('node:module')).createRequire(import.meta.url)(",
    );
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      input: JSON.stringify(HOSTILE),
      timeout: 60_000,
      encoding: 'utf8',
    });
    expect(child.error).toBeUndefined();
    expect(child.stderr).toBe('');
    const ms = JSON.parse(child.stdout) as Record<string, number>;
    expect(Object.keys(ms)).toEqual(Object.keys(HOSTILE));
    for (const [name, took] of Object.entries(ms)) expect({ name, took: took < 3_000 }).toEqual({ name, took: true });
  });

  it('still finds secrets behind prefixes, in quotes and in long runs', () => {
    expect(redactText('"db_password": "hunter2"')).toBe('"db_password": "[Redacted]"');
    expect(redactText('x-api-key=ab12cd34')).toBe('x-api-key=[Redacted]');
    expect(redactText("'vault.token': merge")).toBe("'vault.token': merge");
    const token = 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdEF';
    expect(redactText(`key ${token}== end`)).toBe('key [Redacted] end');
    expect(redactText(`a ${'xY7'.repeat(2_000)} b`) === `a ${'xY7'.repeat(2_000)} b`).toBe(true);
    expect(redactText(`postgres://ada:s3cret@db.example/x`)).toBe('postgres://ada:[Redacted]@db.example/x');
  });
});
