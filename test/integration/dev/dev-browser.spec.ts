import type { BrowserContext, Page } from 'playwright-core';
import { launchChromium, screenshotForDocs } from '../../support/headless-chromium.js';
import { haveService } from '../../support/services.js';
import { NotesPlugin, startDevFixture, type DevFixture } from '../../support/dev-fixture.js';

const ok = await haveService('chromium', 'trellis dev browser tests');

(ok ? describe : describe.skip)('trellis dev in headless Chromium', () => {
  let chromium: { context: BrowserContext; close(): Promise<void> };
  let f: DevFixture;
  let page: Page;
  const pageErrors: string[] = [];

  // Generous waits: CI machines are shared, and a loaded one starts Chromium and renders slowly.
  beforeAll(async () => {
    chromium = await launchChromium();
  }, 90_000);
  afterAll(() => chromium?.close());

  beforeEach(async () => {
    f = await startDevFixture({ delayMs: 150 });
    page = await chromium.context.newPage();
    page.setDefaultTimeout(60_000);
    pageErrors.length = 0;
    page.on('pageerror', (error) => pageErrors.push(error.message));
  });
  afterEach(async () => {
    await page?.close();
    await f?.close();
  });

  it("opens a session from the list and shows a turn's timeline with its tool call, escaped", async () => {
    await f.agent.session('research').send('search <b>cats</b>');
    await f.agent.session('chitchat').send('hello');
    await f.agent.session('cleanup').send('delete 3');
    await f.dev.recorder.flushed();

    await page.goto(`${f.base}/`);
    await page.locator('tr[data-session="research"] .s-completed').waitFor();
    expect(await page.locator('tr[data-session="cleanup"] .status').textContent()).toBe('suspended');
    await screenshotForDocs(page, 'dev-sessions');
    await page.click('a[href="/sessions/research"]');

    const tool = page.locator('article.turn[data-turn="0"] .wf-row[data-kind="tool"]');
    await tool.waitFor();
    expect(await tool.locator('.name').textContent()).toBe('notes.search');
    expect(await tool.locator('.wf-detail').textContent()).toContain('middleware: AuditMiddleware');
    expect(await page.locator('article.turn[data-turn="0"] .wf-row[data-kind="model"]').count()).toBe(2);
    expect(await page.locator('article.turn[data-turn="0"] .wf-row[data-kind="hook"]').count()).toBeGreaterThan(0);
    // The tool's <script> and <img onerror> arrived as text: nothing ran, the text is there.
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('.msg[data-role="tool"] .text').first().textContent()).toContain(
      '<script>window.__pwned = 1</script>',
    );
    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('sends a message from the chat box, approves the suspended call with a click, and sees the turn complete', async () => {
    await page.goto(`${f.base}/sessions/new`);
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    await page.fill('#message', 'delete 5');
    await page.click('aside.chat button[type="submit"]');

    const approval = page.locator('form.approval');
    await approval.waitFor();
    expect(await approval.locator('.ticket').textContent()).toBe('Deleting note {"id":5} needs a human <b>yes</b>');
    expect(await approval.locator('pre.args').textContent()).toBe('{\n  "id": 5\n}');
    expect(await page.locator('#live li').count()).toBeGreaterThan(0);
    await page.locator('form.approval textarea[name="args"]').fill('{ "id": "five" }');
    await page.click('form.approval button[value="edit"]');
    await page.locator('form.approval .error:not(:empty)').waitFor();
    expect(await page.locator('form.approval .error').textContent()).toMatch(/^InvalidDecision: .*id/);
    expect(NotesPlugin.deleted).toEqual([]);
    await page.locator('form.approval textarea[name="args"]').fill('{ "id": 5 }');
    await screenshotForDocs(page, 'dev-approval');

    await page.click('form.approval button.approve');

    await page.locator('article.turn[data-turn="0"] h2 .s-completed').waitFor();
    expect(await page.locator('form.approval').count()).toBe(0);
    expect(await page.locator('.msg[data-role="assistant"] .text').last().textContent()).toBe(
      'Tool said: deleted note 5',
    );
    expect(NotesPlugin.deleted).toEqual([5]);
    const kinds = await page
      .locator('article.turn[data-turn="0"] .wf-row')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-kind')));
    expect(kinds).toEqual(expect.arrayContaining(['suspended', 'resumed', 'tool', 'model', 'round']));
    await screenshotForDocs(page, 'dev-session');
    expect(pageErrors).toEqual([]);
  }, 120_000);

  it("shows a suspended turn's message before the approval, streams each model reply on a line of its own, and asks for nothing that is not there", async () => {
    const failed: string[] = [];
    page.on(
      'response',
      (response) => void (response.status() >= 400 && failed.push(`${response.status()} ${response.url()}`)),
    );
    await f.agent.session('parked').send('delete 7');
    await f.dev.recorder.flushed();

    await page.goto(`${f.base}/sessions/parked`);
    await page.locator('form.approval').waitFor();
    // The turn waits, and the transcript already shows what asked for the call.
    expect(await page.locator('.msg[data-role="user"] .text').allTextContents()).toEqual(['delete 7']);
    expect(await page.locator('p.empty').count()).toBe(0);
    expect(await page.locator('link[rel="icon"]').count()).toBe(1);

    await page.fill('#message', 'think cats');
    await page.click('aside.chat button[type="submit"]');
    await page.locator('#stream').filter({ hasText: 'Tool said:' }).waitFor();
    expect(await page.locator('#stream').textContent()).toMatch(/^Let me look that up\.\n\nTool said: /);
    expect(failed).toEqual([]);
    expect(pageErrors).toEqual([]);
  }, 120_000);

  it('shows the plugins page', async () => {
    await page.goto(`${f.base}/plugins`);
    expect(await page.locator('article.plugin[data-plugin="notes"] h2').textContent()).toContain('notes');
    expect(await page.locator('table.tools').textContent()).toContain('AuditMiddleware');
    await screenshotForDocs(page, 'dev-plugins');
  }, 120_000);
});
