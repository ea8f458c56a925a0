import 'reflect-metadata';
import { createServer, type Server } from 'node:http';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Trellis, ScriptedModel, TrellisError } from '../../../index.js';
import {
  EMBEDDING_PROVIDER,
  OpenAIEmbeddings,
  RagPlugin,
  cosineSimilarity,
  type EmbeddingProvider,
} from '../../../plugins/retrieval/index.js';

/** A deterministic bag-of-words embedding: each word adds 1 to a hashed dimension. */
function fakeEmbedding(text: string, dims = 64): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
    if (word.length < 4) continue; // skip stop-word-ish short words
    let h = 0;
    for (const c of word) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    v[h % dims]! += 1;
  }
  return v;
}

class FakeEmbeddings implements EmbeddingProvider {
  readonly name = 'fake';
  readonly batches: string[][] = [];
  async embed(texts: readonly string[]): Promise<number[][]> {
    this.batches.push([...texts]);
    return texts.map((t) => fakeEmbedding(t));
  }
}

const DOCS = {
  'refunds.md':
    'Refund policy\n\nCustomers may ask for a refund within thirty days of purchase. Refunds go back to the original card.',
  'guides/shipping.md':
    'Shipping\n\nParcels ship from Rotterdam every weekday. International delivery takes five business days.',
  'notes.json': '{"ignored": "not an indexed extension"}',
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'trellis-rag-'));
  await mkdir(join(dir, 'docs', 'guides'), { recursive: true });
  for (const [file, text] of Object.entries(DOCS)) await writeFile(join(dir, 'docs', file), text);
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const systemTexts = (model: ScriptedModel, call = 0) =>
  model.calls[call]!.messages.filter((m) => m.role === 'system').map((m) => m.content);

describe('RagPlugin (full text)', () => {
  it('injects the top passages with their sources before the model call, and persists the index', async () => {
    const indexPath = join(dir, 'index', 'rag.json');
    const app = Trellis.create();
    const rag = (
      await app.install(RagPlugin, {
        config: {
          documentsDir: join(dir, 'docs'),
          documents: [
            {
              id: 'faq',
              source: 'https://example.com/faq',
              text: 'Opening hours: the support desk answers from nine to five.',
            },
          ],
          indexPath,
          topK: 1,
        },
      })
    ).instance;
    expect(rag.size).toBe(3);
    const model = new ScriptedModel(['Within thirty days.', 'Five days.']);
    const session = app.agent({ name: 'a', model, instructions: 'Answer from the passages.' }).session('s1');
    await session.send('How long do I have to get a refund?');

    const system = systemTexts(model);
    expect(system[0]).toBe('Answer from the passages.');
    expect(system).toHaveLength(2);
    expect(system[1]).toContain('[1] refunds.md (refunds.md#1)');
    expect(system[1]).toContain('within thirty days of purchase');
    expect(system[1]).not.toContain('Rotterdam');

    await session.send('When does international delivery arrive?');
    const second = systemTexts(model, 1);
    expect(second[1]).toContain('guides/shipping.md');
    expect(second[1]).toContain('five business days');

    const persisted = JSON.parse(await readFile(indexPath, 'utf8')) as {
      version: number;
      fingerprint: string;
      index: unknown;
    };
    expect(persisted).toMatchObject({ version: 1, kind: 'fulltext', fingerprint: expect.any(String) });
  });

  it('reuses the persisted index while the documents are unchanged, and rebuilds it when they change', async () => {
    const indexPath = join(dir, 'rag.json');
    const config = { documentsDir: join(dir, 'docs'), indexPath };
    await Trellis.create().install(RagPlugin, { config });
    const marked = { ...JSON.parse(await readFile(indexPath, 'utf8')), marker: true };
    await writeFile(indexPath, JSON.stringify(marked));

    const again = (await Trellis.create().install(RagPlugin, { config })).instance;
    expect(JSON.parse(await readFile(indexPath, 'utf8')).marker).toBe(true);
    expect((await again.search('refund'))[0]!.source).toBe('refunds.md');

    await writeFile(join(dir, 'docs', 'new.txt'), 'Gift cards never expire.');
    const rebuilt = (await Trellis.create().install(RagPlugin, { config })).instance;
    expect(JSON.parse(await readFile(indexPath, 'utf8')).marker).toBeUndefined();
    expect((await rebuilt.search('gift cards'))[0]!.source).toBe('new.txt');
  });

  it('adds nothing when no passage matches', async () => {
    const app = Trellis.create();
    await app.install(RagPlugin, { config: { documents: [{ id: 'a', text: 'Refunds within thirty days.' }] } });
    const model = new ScriptedModel(['hi']);
    await app.agent({ name: 'a', model, instructions: 'x' }).session('s1').send('zzz qqq');
    expect(systemTexts(model)).toEqual(['x']);
  });

  it('refuses bad config, naming every bad field', async () => {
    const error = await Trellis.create()
      .install(RagPlugin, {
        config: { topK: 0, search: 'semantic', extensions: ['md'], documents: [{ id: '', text: 5 }], documentsDir: 7 },
      })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    for (const field of ['topK', 'search', 'extensions', 'documents[0].id', 'documents[0].text', 'documentsDir'])
      expect((error as Error).message).toContain(field);
    const none = await Trellis.create()
      .install(RagPlugin, { config: {} })
      .catch((e: unknown) => e);
    expect((none as Error).message).toContain('documentsDir');
  });
});

describe('RagPlugin (vector search)', () => {
  it('ranks passages by cosine similarity of a bound EmbeddingProvider', async () => {
    const embeddings = new FakeEmbeddings();
    const app = Trellis.create({ providers: [{ provide: EMBEDDING_PROVIDER, useValue: embeddings }] });
    const rag = (
      await app.install(RagPlugin, { config: { documentsDir: join(dir, 'docs'), search: 'vector', topK: 1 } })
    ).instance;
    expect(embeddings.batches[0]).toHaveLength(2);
    const model = new ScriptedModel(['ok']);
    await app
      .agent({ name: 'a', model, instructions: 'x' })
      .session('s1')
      .send('Which weekday do parcels ship from Rotterdam?');
    expect(systemTexts(model)[1]).toContain('guides/shipping.md');
    const hits = await rag.search('refund purchase card', 2);
    expect(hits[0]!.source).toBe('refunds.md');
    expect(hits[0]!.score).toBeCloseTo(
      cosineSimilarity(fakeEmbedding('refund purchase card'), fakeEmbedding(DOCS['refunds.md'])),
      10,
    );
    expect(hits[0]!.score).toBeGreaterThan(hits[1]!.score);
  });

  it('persists the passage embeddings to indexPath and reuses them while nothing changed', async () => {
    const indexPath = join(dir, 'vectors.json');
    const first = new FakeEmbeddings();
    const config = { documentsDir: join(dir, 'docs'), search: 'vector', indexPath };
    await Trellis.create({ providers: [{ provide: EMBEDDING_PROVIDER, useValue: first }] }).install(RagPlugin, {
      config,
    });
    expect(first.batches).toHaveLength(1);
    expect(JSON.parse(await readFile(indexPath, 'utf8'))).toMatchObject({
      kind: 'vectors',
      embedder: 'fake',
      vectors: expect.any(Array),
    });

    const second = new FakeEmbeddings();
    const rag = (
      await Trellis.create({ providers: [{ provide: EMBEDDING_PROVIDER, useValue: second }] }).install(RagPlugin, {
        config,
      })
    ).instance;
    expect(second.batches).toHaveLength(0);
    expect((await rag.search('refund purchase card', 1))[0]!.source).toBe('refunds.md');

    // Switching to full text on the same file rebuilds rather than misreading it.
    const fullText = (await Trellis.create().install(RagPlugin, { config: { ...config, search: 'fulltext' } }))
      .instance;
    expect((await fullText.search('refund'))[0]!.source).toBe('refunds.md');
  });

  it('refuses vector search without an embedding provider', async () => {
    const error = await Trellis.create()
      .install(RagPlugin, { config: { documents: [{ id: 'a', text: 'x' }], search: 'vector' } })
      .catch((e: unknown) => e);
    expect((error as Error).message).toContain('EMBEDDING_PROVIDER');
  });
});

describe('OpenAIEmbeddings', () => {
  let server: Server;
  let baseURL: string;
  const requests: {
    url?: string;
    auth?: string;
    body: { model: string; input: string[]; encoding_format?: string; dimensions?: number };
  }[] = [];
  let failNext: number | undefined;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const body = JSON.parse(raw) as (typeof requests)[number]['body'];
        requests.push({ url: req.url, auth: req.headers.authorization, body });
        res.setHeader('content-type', 'application/json');
        if (failNext) {
          res.statusCode = failNext;
          failNext = undefined;
          res.end(JSON.stringify({ error: { message: 'bad model', type: 'invalid_request_error' } }));
          return;
        }
        // Answer out of order: the client must order by index.
        const data = body.input
          .map((text, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(text) }))
          .reverse();
        res.end(
          JSON.stringify({ object: 'list', data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } }),
        );
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseURL = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => (requests.length = 0));

  it('speaks the /embeddings wire format, in batches, with vectors in input order', async () => {
    const embeddings = new OpenAIEmbeddings({
      baseURL,
      apiKey: 'sk-test',
      model: 'embed-small',
      batchSize: 2,
      dimensions: 64,
    });
    const texts = ['refund policy', 'shipping from Rotterdam', 'support hours'];
    const vectors = await embeddings.embed(texts);
    expect(vectors).toEqual(texts.map((t) => fakeEmbedding(t)));
    expect(requests.map((r) => r.body.input)).toEqual([
      ['refund policy', 'shipping from Rotterdam'],
      ['support hours'],
    ]);
    expect(requests[0]).toMatchObject({
      url: '/v1/embeddings',
      auth: 'Bearer sk-test',
      body: { model: 'embed-small', encoding_format: 'float', dimensions: 64 },
    });
    expect(embeddings.name).toBe('openai:embed-small');
  });

  it('turns an HTTP error into a non-retryable EmbeddingFailed', async () => {
    failNext = 400;
    const error = await new OpenAIEmbeddings({ baseURL, maxRetries: 0 }).embed(['x']).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'EmbeddingFailed')).toBe(true);
    expect((error as TrellisError).retryable).toBe(false);
    expect((error as Error).message).toContain('HTTP 400');
  });

  it('drives the RAG plugin’s vector search end to end', async () => {
    const app = Trellis.create({
      providers: [{ provide: EMBEDDING_PROVIDER, useValue: new OpenAIEmbeddings({ baseURL, model: 'embed-small' }) }],
    });
    await app.install(RagPlugin, { config: { documentsDir: join(dir, 'docs'), search: 'vector', topK: 1 } });
    const model = new ScriptedModel(['ok']);
    await app.agent({ name: 'a', model, instructions: 'x' }).session('s1').send('I want a refund for my purchase');
    expect(systemTexts(model)[1]).toContain('refunds.md');
    expect(requests.at(-1)!.body.input).toEqual(['I want a refund for my purchase']);
  });
});
