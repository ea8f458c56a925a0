import 'reflect-metadata';
import { IsOptional, IsString } from 'class-validator';
import {
  inject,
  LoggingMiddleware,
  Middleware,
  Plugin,
  Requires,
  Secret,
  Tool,
  type ModelProvider,
  type ModelRequest,
  type ModelResponse,
  type ToolContext,
} from '../../index.js';
import { PLUGIN_CONFIG } from '../../plugin.js';
import { ScriptedModel } from '../../testing.js';

/**
 * The secrets matrix of issue 33, item 5: what is placed, where it is placed (the sources),
 * and the plugins and models that carry it there. The sinks are read by
 * `test/integration/hardening/secrets-matrix.spec.ts`.
 */

const PEM =
  '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yV8EXAMPLEPEMBODYLINE0123456789abcdefABCDEF\n-----END RSA PRIVATE KEY-----';

/** Each secret: the value placed, and the part of it that must never appear in clear. */
export const SECRETS: ReadonlyArray<readonly [name: string, placed: string, clear: string]> = [
  [
    'AWS secret access key',
    'aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
    'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY',
  ],
  ['AWS secret key alone', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
  ['DB password in a URL', 'postgres://app:S3cr3tPa55w0rd@db.internal:5432/prod', 'S3cr3tPa55w0rd'],
  ['PEM private key', PEM, 'MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn'],
  [
    'Azure storage key',
    'DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net',
    'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq',
  ],
  ['a PIN in text', 'pin: 904172', '904172'],
  ['a cookie header', 'Cookie: sessionid=9f8e7d6c5b4a3928; csrftoken=Zx81kQpL0vT3', '9f8e7d6c5b4a3928'],
  ['a hex token', 'token a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3', 'a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3'],
  ['a bare hex token', 'a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3', 'a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3'],
  [
    'a base64 token',
    'dGhpc0lzQVZlcnlMb25nU2VjcmV0VG9rZW5WYWx1ZTEyMw',
    'dGhpc0lzQVZlcnlMb25nU2VjcmV0VG9rZW5WYWx1ZTEyMw',
  ],
  ['a bearer token', 'Authorization: Bearer 7Fq2vX9pL3mK8rT1', '7Fq2vX9pL3mK8rT1'],
  ['an OpenAI key', 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ123456', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ123456'],
  ['a GitHub token', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a', '16C7e42F292c6912E7710c838347Ae178B4a'],
  [
    'a JWT',
    'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.Sfl5kKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw',
    'Sfl5kKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw',
  ],
  ['an Anthropic key', 'sk-ant-api03-Zq8mR2vT6yB1nK4pW7sX0cF3hJ5lD9gA', 'Zq8mR2vT6yB1nK4pW7sX0cF3hJ5lD9gA'],
  ['a Stripe key', 'rk_live_4eC39HqLyjWDarjtT1zdp7dc', '4eC39HqLyjWDarjtT1zdp7dc'],
  ['a Slack token', 'xoxb-2048-1024-AbCdEfGhIjKlMnOp', '2048-1024-AbCdEfGhIjKlMnOp'],
  ['a Google API key', 'AIzaSyD9tSrke72PouQMnMXa7eZSW0jkFMBWY-x', 'SyD9tSrke72PouQMnMXa7eZSW0jkFMBWY'],
  ['a GitLab token', 'glpat-xYz12AbCdEfGhIjKlMnOp', 'xYz12AbCdEfGhIjKlMnOp'],
  ['basic auth', 'Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l', 'YWxhZGRpbjpvcGVuc2VzYW1l'],
  ['a password pair', 'password=Tr0ub4dor3xyz', 'Tr0ub4dor3xyz'],
];

/** A value no shape gives away: only its `@Secret()` field marks it. Placed in the `secret field` source only. */
export const ORDINARY_SECRET = [
  'an ordinary value in a @Secret() field',
  'correct horse battery staple',
  'correct horse battery staple',
] as const;

export const SOURCES = [
  'arguments',
  'error',
  'result',
  'secret field',
  'plugin config',
  'model options',
  'host context',
] as const;
export type Source = (typeof SOURCES)[number];

export class NoteInput {
  @IsString() note!: string;
  @IsOptional() @IsString() source?: string;
}

export class LoginInput {
  @IsString() user!: string;
  @Secret() @IsString() memo!: string;
}

export class NoInput {}

@Plugin({ name: 'carrier', version: '1.0.0' })
@Middleware(LoggingMiddleware)
export class CarrierPlugin {
  @Tool({ name: 'carrier.echo', description: 'Returns its note. Tests only.', input: NoteInput })
  echo(input: NoteInput) {
    return { note: input.note };
  }

  @Tool({ name: 'carrier.take', description: 'Takes a note and answers ok. Tests only.', input: NoteInput })
  take() {
    return 'ok';
  }

  @Tool({ name: 'carrier.fail', description: 'Fails with its note. Tests only.', input: NoteInput })
  fail(input: NoteInput) {
    throw new Error(`upstream refused the request: ${input.note}`);
  }

  @Tool({ name: 'carrier.login', description: 'Logs in with a memo marked @Secret(). Tests only.', input: LoginInput })
  login(input: LoginInput) {
    return { user: input.user, ok: input.memo.length > 0 };
  }
}

export class UpstreamConfig {
  @IsString() endpoint!: string;
  @IsString() note!: string;
}

/** An HTTP client's error, as SDKs throw them: the message echoes what was sent, the request options ride along. */
function upstreamError(endpoint: string, sent: string): Error {
  return Object.assign(new Error(`request to ${endpoint} refused: 401 for ${sent}`), {
    status: 401,
    request: { url: endpoint, headers: { 'x-upstream-note': sent } },
  });
}

/** Calls an upstream with what its config holds; the upstream refuses, echoing it. */
@Plugin({ name: 'upstream', version: '1.0.0', config: UpstreamConfig })
@Middleware(LoggingMiddleware)
export class UpstreamPlugin {
  constructor(@inject(PLUGIN_CONFIG) private readonly config: UpstreamConfig) {}

  @Tool({ name: 'upstream.call', description: 'Calls the upstream service. Tests only.', input: NoInput })
  call() {
    throw upstreamError(this.config.endpoint, this.config.note);
  }
}

/** Passes the host's `app.note` on to an upstream, which refuses, echoing it. */
@Plugin({ name: 'forwarder', version: '1.0.0' })
@Middleware(LoggingMiddleware)
export class ForwarderPlugin {
  @Tool({ name: 'forwarder.call', description: 'Forwards the host note. Tests only.', input: NoInput })
  @Requires('app.note')
  call(_input: NoInput, ctx: ToolContext) {
    throw upstreamError('https://partner.example.com', String(ctx.get('app.note')));
  }
}

/** A vendor model whose options hold the secret and whose errors echo them, as vendor SDKs' do. */
export class VendorModel implements ModelProvider {
  readonly name = 'vendor';
  constructor(private readonly options: { readonly apiKey: string }) {}
  call(_request: ModelRequest): Promise<ModelResponse> {
    return Promise.reject(
      Object.assign(new Error(`401 Incorrect API key provided: ${this.options.apiKey}`), {
        status: 401,
        headers: { authorization: `Bearer ${this.options.apiKey}` },
        options: this.options,
      }),
    );
  }
}

/** The tool each source's turn calls, and its arguments. */
export function callOf(
  source: Source,
  secret: string,
): { readonly name: string; readonly args: Record<string, unknown> } | undefined {
  switch (source) {
    case 'arguments':
      return { name: 'carrier.take', args: { note: secret } };
    case 'error':
      return { name: 'carrier.fail', args: { note: secret } };
    case 'result':
      return { name: 'carrier.echo', args: { note: secret } };
    case 'secret field':
      return { name: 'carrier.login', args: { user: 'ada', memo: secret } };
    case 'plugin config':
      return { name: 'upstream.call', args: {} };
    case 'host context':
      return { name: 'forwarder.call', args: {} };
    case 'model options':
      return undefined;
  }
}

/** What the model reads of tool results, for the sinks. */
export interface ModelReads {
  readonly toolMessages: string[];
}

/**
 * The agent's model for a source: a scripted model that asks for the source's tool once per
 * turn and then answers "done" (it may run many turns), or, for `model options`, two vendor
 * models holding the secret in their options, one falling back to the other.
 */
export function modelOf(source: Source, secret: string, reads: ModelReads): ModelProvider | ModelProvider[] {
  if (source === 'model options') return [new VendorModel({ apiKey: secret }), new VendorModel({ apiKey: secret })];
  const call = callOf(source, secret)!;
  return new ScriptedModel((request) => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') {
      reads.toolMessages.push(String(last.content));
      return 'done';
    }
    return { toolCalls: [{ name: call.name, args: call.args }] };
  });
}

/** Plugins to install, with the config holding the secret for `plugin config`. */
export function pluginsOf(source: Source, secret: string): ReadonlyArray<readonly [Function, { config?: unknown }]> {
  return [
    [CarrierPlugin, {}],
    [
      UpstreamPlugin,
      { config: { endpoint: 'https://api.example.com', note: source === 'plugin config' ? secret : 'nothing secret' } },
    ],
    [ForwarderPlugin, {}],
  ];
}

/** Host context: the secret as `app.note` for `host context`. */
export function contextOf(source: Source, secret: string): Record<string, unknown> {
  return { 'app.user_id': 'ada', 'app.note': source === 'host context' ? secret : 'nothing secret' };
}
