import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM_PATH } from './services.js';

/**
 * Debian's chromium, headless, with a fresh profile (playwright passes it as --user-data-dir)
 * and nothing that reaches the network on its own.
 */
export async function launchChromium(): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  const profile = mkdtempSync(join(tmpdir(), 'trellis-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const IMAGES = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'images');

/**
 * With `TRELLIS_SCREENSHOTS=1`, saves the page as `docs/images/<name>.png` (the pictures in
 * docs/dev-ui.md come from here); otherwise does nothing.
 */
export async function screenshotForDocs(page: Page, name: string): Promise<void> {
  if (process.env.TRELLIS_SCREENSHOTS !== '1') return;
  mkdirSync(IMAGES, { recursive: true });
  await page.screenshot({ path: join(IMAGES, `${name}.png`), fullPage: true });
}
