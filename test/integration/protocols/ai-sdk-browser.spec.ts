import 'reflect-metadata';
import { fileURLToPath } from 'node:url';
import type { INestApplication } from '@nestjs/common';
import { build } from 'esbuild';
import type { BrowserContext } from 'playwright-core';
import { MemoryStore } from 'trellis';
import { exportRuns } from '../../support/export-desk.js';
import { launchChromium } from '../../support/headless-chromium.js';
import { bootChatApp, USER_HEADER } from '../../support/nest-chat.js';
import { haveService } from '../../support/services.js';

const ok = await haveService('chromium', 'the useChat page against TrellisChatModule');
const PAGE = fileURLToPath(new URL('../../fixtures/ai-sdk-chat/chat-page.tsx', import.meta.url));

(ok ? describe : describe.skip)('a real useChat page (@ai-sdk/react) against TrellisChatModule, in Chromium', () => {
  let app: INestApplication;
  let url: string;
  let chromium: { context: BrowserContext; close(): Promise<void> };
  beforeAll(async () => {
    // The page, bundled as a front-end build would bundle it.
    const bundle = await build({
      entryPoints: [PAGE],
      bundle: true,
      write: false,
      format: 'esm',
      jsx: 'automatic',
      minify: true,
      define: { 'process.env.NODE_ENV': '"production"' },
      logLevel: 'silent',
    });
    const script = bundle.outputFiles[0]!.text;
    const booted = await bootChatApp(new MemoryStore(), undefined, undefined, (nest) => {
      nest.use(
        (
          req: { url: string },
          res: { setHeader(n: string, v: string): void; end(b: string): void },
          next: () => void,
        ) => {
          if (req.url === '/') {
            res.setHeader('content-type', 'text/html');
            return res.end(
              '<!doctype html><html><body><div id="root"></div><script type="module" src="/chat.js"></script></body></html>',
            );
          }
          if (req.url === '/chat.js') {
            res.setHeader('content-type', 'text/javascript');
            return res.end(script);
          }
          next();
        },
      );
    });
    app = booted.app;
    url = booted.url;
    chromium = await launchChromium();
    // The signed-in user, as the host's auth would know them: the chat is theirs.
    await chromium.context.setExtraHTTPHeaders({ [USER_HEADER]: 'alice' });
  }, 120_000);
  afterAll(async () => {
    await chromium?.close();
    await app?.close();
  });

  it('send, see the tool call wait for approval, approve, see the output and the reply; the call ran once', async () => {
    exportRuns.length = 0;
    const page = await chromium.context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(url);
    await page.getByPlaceholder('Ask').fill('Export the top customers');
    await page.getByRole('button', { name: 'Send' }).click();
    const tool = page.locator('.tool');
    await tool.locator('.state', { hasText: 'approval-requested' }).waitFor({ timeout: 15_000 });
    expect(await tool.locator('code').textContent()).toBe('files.export');
    expect(exportRuns).toEqual([]);
    await page.getByRole('button', { name: 'Approve' }).click();
    await tool.locator('.state', { hasText: 'output-available' }).waitFor({ timeout: 15_000 });
    expect(await tool.locator('.output').textContent()).toContain('top-customers.csv');
    await page.locator('[data-role=assistant] .text', { hasText: 'Exported:' }).waitFor({ timeout: 15_000 });
    expect(exportRuns).toEqual(['top-customers']);
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
