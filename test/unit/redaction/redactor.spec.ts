import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Secret } from '../../../decorators/secret.decorator.js';
import { isSecretKey, redactSecrets, redactText } from '../../../src/redaction/redactor.js';

describe('secret key names, case-insensitively, at any depth', () => {
  it.each(['accessToken', 'clientSecret', 'api_token', 'x-api-key', 'X-API-KEY', 'sessionToken', 'privateKey', 'passwd', 'auth', 'Authorization', 'bearer', 'cookie', 'Set-Cookie', 'password', 'refresh_token', 'awsSecretAccessKey', 'credentials'])('%s is secret', (key) => {
    expect(isSecretKey(key)).toBe(true);
  });

  it.each(['inputTokens', 'outputTokens', 'maxTokens', 'author', 'sessionId', 'tool', 'key', 'message', 'tokenizer'])('%s is not', (key) => {
    expect(isSecretKey(key)).toBe(false);
  });

  it('redacts nested objects and arrays and leaves the original alone', () => {
    const input = { a: [{ deep: { b: { accessToken: 't0ken-value' } } }], headers: { 'x-api-key': 'k1' }, usage: { inputTokens: 5 } };
    expect(redactSecrets(input)).toEqual({ a: [{ deep: { b: { accessToken: '[Redacted]' } } }], headers: { 'x-api-key': '[Redacted]' }, usage: { inputTokens: 5 } });
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
    ['jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U', 'jwt [Redacted]'],
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
    expect(redactSecrets({ user: 'ada', pin: '1234' }, { topLevelSecrets: ['pin'] })).toEqual({ user: 'ada', pin: '[Redacted]' });
  });
});

describe('redaction costs linear time on hostile text', () => {
  it.each([
    ['letters', 'x'.repeat(1_000_000)],
    ['key names without values', 'db_password'.repeat(100_000)],
    ['Bearer without a token', 'Bearer '.repeat(150_000)],
    ['JWT-looking prefixes', 'eyJaaaaa.'.repeat(110_000)],
    ['key prefixes', 'sk-'.repeat(300_000)],
    ['pairs', 'token=abcd&'.repeat(90_000)],
  ])('1 MB of %s takes seconds at most, not minutes (no catastrophic backtracking)', (_name, text) => {
    const started = performance.now();
    redactText(text);
    expect(performance.now() - started).toBeLessThan(3_000);
  });
});
