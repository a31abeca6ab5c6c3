// Drives code-server's workbench in a headless Chromium for the end-to-end
// test (vscode_test.go): puppeteer-core and @sparticuz/chromium come from
// the directory in ORION_E2E_MODULES. It talks with the Go test in lines:
// it prints "step NAME" when it reached a point, and waits for "go NAME"
// on stdin where the test must act first (stream, finalize, refuse). Any
// failure prints "fail MESSAGE" and exits 1, with a screenshot beside it.
//
// The workbench's DOM is internal to VS Code: the selectors are few
// (status bar items, list rows, notifications, the quick input, the diff
// editor) and hold for the pinned code-server.
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";

const mods = process.env.ORION_E2E_MODULES;
const url = process.env.ORION_E2E_URL;
const shots = process.env.ORION_E2E_SHOTS; // directory for failure screenshots
const shot = process.env.ORION_E2E_SCREENSHOT; // the docs screenshot, when asked
const target = process.env.ORION_E2E_TARGET; // the file streamed, as the workbench names it
const puppeteer = (await import(path.join(mods, "puppeteer-core/lib/puppeteer/puppeteer-core.js"))).default;

const lines = readline.createInterface({ input: process.stdin });
const waiting = [];
const received = [];
lines.on("line", (l) => {
  const w = waiting.shift();
  if (w) w(l);
  else received.push(l);
});
function next() {
  return received.length ? Promise.resolve(received.shift()) : new Promise((r) => waiting.push(r));
}
async function expect(name) {
  const l = await next();
  if (l !== `go ${name}`) throw new Error(`expected "go ${name}" from the test, got "${l}"`);
}
function step(name) {
  console.log(`step ${name}`);
}

// $CHROME_BIN, else the Chromium inside @sparticuz/chromium (unpacked into
// the temp dir on first use), else Debian's.
let executablePath = process.env.CHROME_BIN;
if (!executablePath) {
  try {
    const chromium = (await import(path.join(mods, "@sparticuz/chromium/build/index.js"))).default;
    // It unpacks into os.tmpdir(); the test points that at its cache for
    // the unpacking only, so the browser's own temp files go elsewhere.
    const tmpdir = process.env.TMPDIR;
    if (process.env.ORION_E2E_CHROMIUM_TMPDIR) process.env.TMPDIR = process.env.ORION_E2E_CHROMIUM_TMPDIR;
    try {
      executablePath = await chromium.executablePath();
    } finally {
      if (tmpdir === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = tmpdir;
    }
  } catch (err) {
    if (!fs.existsSync("/usr/bin/chromium")) throw err;
    console.log(`log @sparticuz/chromium failed (${err.message}); using /usr/bin/chromium`);
    executablePath = "/usr/bin/chromium";
  }
}
const profile = fs.mkdtempSync(path.join(shots, "profile-"));
// Not the package's default args: they turn web security off and run one
// process, which would hide what a real browser does.
const browser = await puppeteer.launch({
  executablePath,
  headless: true,
  userDataDir: profile,
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  defaultViewport: { width: 1280, height: 760 },
});
// Puppeteer starts Chromium in a process group of its own: the test ends
// that group too, should this driver not get to close it.
console.log(`chromium-pid ${browser.process()?.pid ?? 0}`);
const page = await browser.newPage();

const statusText = () =>
  page.evaluate(() => {
    const el = [...document.querySelectorAll(".statusbar-item")].find((e) => e.id.endsWith("orion.status"));
    return el ? el.textContent.trim() : "";
  });
async function waitStatus(pred, what, ms = 30_000) {
  const end = Date.now() + ms;
  let last = "";
  while (Date.now() < end) {
    last = await statusText();
    if (pred(last)) return last;
    await sleep(100);
  }
  throw new Error(`the status bar never showed ${what}; it shows "${last}"`);
}
// rows are the lines of the Orion sessions view, top to bottom.
const rows = () =>
  page.evaluate(() => {
    const view = document.querySelector('[id="workbench.view.extension.orion"]');
    if (!view) return [];
    return [...view.querySelectorAll(".monaco-list-row")].map((r) => r.textContent.trim());
  });
async function waitRows(pred, what, ms = 30_000) {
  const end = Date.now() + ms;
  let last = [];
  while (Date.now() < end) {
    last = await rows();
    if (pred(last)) return last;
    await sleep(100);
  }
  throw new Error(`the sessions view never showed ${what}; its rows: ${JSON.stringify(last)}`);
}
const toasts = () => page.$$eval(".notifications-toasts .notification-list-item-message", (els) => els.map((e) => e.textContent.trim()));
async function waitToast(pred, what, ms = 30_000) {
  const end = Date.now() + ms;
  let last = [];
  while (Date.now() < end) {
    last = await toasts();
    const hit = last.find(pred);
    if (hit) return hit;
    await sleep(100);
  }
  throw new Error(`no notification ${what}; the notifications: ${JSON.stringify(last)}`);
}
// palette runs a command by its title, as a person does: F1, type, Enter.
async function palette(title) {
  await page.keyboard.press("F1");
  await page.waitForSelector(".quick-input-widget .quick-input-box input", { visible: true });
  await page.keyboard.type(title);
  await page.waitForFunction(
    (t) => [...document.querySelectorAll(".quick-input-list .monaco-list-row")].some((r) => r.getAttribute("aria-label")?.startsWith(t)),
    { timeout: 30_000 },
    title,
  );
  await page.keyboard.press("Enter");
}
// clickToastButton clicks a button of the notification that says msg.
async function clickToastButton(msg, title) {
  await page.evaluate(
    (msg, title) => {
      const item = [...document.querySelectorAll(".notifications-toasts .notification-list-item")].find((i) => i.textContent.includes(msg));
      [...item.querySelectorAll(".monaco-button")].find((b) => b.textContent.trim() === title).click();
    },
    msg,
    title,
  );
}
// quickOpen opens a file of the workspace by name: Ctrl+P, type, Enter.
async function quickOpen(name) {
  await page.keyboard.down("Control");
  await page.keyboard.press("p");
  await page.keyboard.up("Control");
  await page.waitForSelector(".quick-input-widget .quick-input-box input", { visible: true });
  await page.keyboard.type(name);
  await page.waitForFunction(() => document.querySelectorAll(".quick-input-list .monaco-list-row").length > 0, { timeout: 30_000 });
  await page.keyboard.press("Enter");
}
function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}
// openDiffOf clicks the session row of the file named name, which opens
// the diff editor on it, and returns both sides' text.
async function openDiffOf(name) {
  await page.evaluate((n) => {
    const view = document.querySelector('[id="workbench.view.extension.orion"]');
    const row = [...view.querySelectorAll(".monaco-list-row")].find((r) => r.textContent.includes(n) && !r.textContent.startsWith("Written"));
    row.click();
  }, name);
  await page.waitForFunction(() => !!document.querySelector(".monaco-diff-editor .editor.original .view-lines"), { timeout: 30_000 });
  await page.waitForFunction(
    () => {
      const o = document.querySelector(".monaco-diff-editor .editor.original .view-lines")?.textContent ?? "";
      const m = document.querySelector(".monaco-diff-editor .editor.modified .view-lines")?.textContent ?? "";
      return o.length > 0 && m.length > 0;
    },
    { timeout: 30_000 },
  );
  // The editor renders spaces as no-break spaces.
  return page.evaluate(() => ({
    original: document.querySelector(".monaco-diff-editor .editor.original .view-lines").textContent.replace(/\u00a0/g, " "),
    modified: document.querySelector(".monaco-diff-editor .editor.modified .view-lines").textContent.replace(/\u00a0/g, " "),
    tab: document.querySelector(".tab.active")?.textContent ?? "",
  }));
}
// showTraceOf runs Orion: Show Trace… and picks the session of name.
async function showTraceOf(name, text) {
  await palette("Orion: Show Trace");
  await page.waitForFunction(
    (n) => [...document.querySelectorAll(".quick-input-list .monaco-list-row")].some((r) => (r.getAttribute("aria-label") ?? r.textContent).includes(n)),
    { timeout: 30_000 },
    name,
  );
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => (document.querySelector(".tab.active")?.textContent ?? "").includes("trace-"), { timeout: 30_000 });
  await page.waitForFunction(
    (text) => [...document.querySelectorAll(".monaco-editor .view-lines")].some((v) => v.textContent.replace(/\u00a0/g, " ").includes(text)),
    { timeout: 30_000 },
    text,
  );
}

// restrictedFlow: the workspace opens in Restricted Mode with a write
// already done. Orion shows it (status bar, view, diff, trace) and starts
// no program: Open Dashboard and, with oriond down, the status bar's
// Start Daemon say why instead.
async function restrictedFlow() {
  const name = path.basename(target);
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
  console.log(`status ${await waitStatus((t) => t.includes("Orion: 1 written"), '"Orion: 1 written"', 60_000)}`);
  await page.waitForFunction(() => document.body.innerText.includes("Restricted Mode"), { timeout: 30_000 });
  await palette("Orion: Show Sessions");
  console.log(`rows ${JSON.stringify(await waitRows((r) => r.some((x) => x.startsWith("Written")) && r.some((x) => x.includes(name)), "the written session"))}`);
  const diff = await openDiffOf(name);
  console.log(`diff ${JSON.stringify(diff)}`);
  if (!diff.original.includes("the first version") || !diff.modified.includes("the second version")) {
    throw new Error(`the diff editor does not show the replaced version against the file now: ${JSON.stringify(diff)}`);
  }
  await palette("Orion: Open Dashboard");
  console.log(`toast ${await waitToast((t) => t.includes("Open Dashboard starts a program") && t.includes("Restricted Mode"), "saying Restricted Mode runs no program")}`);
  await showTraceOf(name, "wrote ");
  step("shown");
  await expect("killed");
  console.log(`status ${await waitStatus((t) => t.includes("Orion: not running"), '"Orion: not running"')}`);
  await page.evaluate(() => {
    const el = [...document.querySelectorAll(".statusbar-item")].find((e) => e.id.endsWith("orion.status"));
    (el.querySelector("a") ?? el).click();
  });
  console.log(`toast ${await waitToast((t) => t.includes("Start Daemon starts a program"), "saying Start Daemon runs nothing in Restricted Mode")}`);
  step("down");
}

try {
  if (process.env.ORION_E2E_FLOW === "restricted") {
    await restrictedFlow();
    await browser.close();
    process.exit(0);
  }
  await page.goto(url, { waitUntil: "domcontentloaded" });
  await page.waitForSelector(".monaco-workbench", { timeout: 60_000 });
  // Connected: the item says something other than "not running".
  await waitStatus((t) => t.includes("Orion") && !t.includes("not running"), "Orion connected", 60_000);
  // The file the agent will write is open in an editor.
  // Quick open would only focus the diff editor, which shows the file too.
  await palette("View: Close All Editors");
  await quickOpen(path.basename(target));
  await page.waitForFunction((n) => [...document.querySelectorAll(".tab")].some((t) => t.textContent.includes(n)), { timeout: 30_000 }, path.basename(target));
  await palette("Orion: Show Sessions");
  step("ready");

  await expect("streaming");
  const writing = await waitStatus((t) => t.includes("Orion: 1 writing"), '"Orion: 1 writing"');
  console.log(`status ${writing}`);
  const streamingRows = await waitRows((r) => r.some((x) => x.startsWith("Writing")) && r.some((x) => x.includes(path.basename(target))), "the writing session");
  console.log(`rows ${JSON.stringify(streamingRows)}`);
  step("seen-streaming");

  await expect("finalized");
  const writtenRows = await waitRows((r) => r.some((x) => x.startsWith("Written")) && !r.some((x) => x.startsWith("Writing")), "the written session");
  console.log(`rows ${JSON.stringify(writtenRows)}`);
  // Selecting the written session opens the diff editor on it.
  const diff = await openDiffOf(path.basename(target));
  console.log(`diff ${JSON.stringify(diff)}`);
  // Left: the version the write replaced; right: the file now.
  if (!diff.original.includes("the first version") || !diff.modified.includes("the second version")) {
    throw new Error(`the diff editor does not show the replaced version against the file now: ${JSON.stringify(diff)}`);
  }
  if (!diff.tab.includes("before the agent's write")) throw new Error(`the diff's title is "${diff.tab}"`);
  step("diff");
  if (shot) {
    await sleep(500);
    await page.screenshot({ path: shot });
  }

  await palette("Orion: Undo Last Write");
  const undone = await waitToast((t) => t.startsWith("Orion: undone"), 'saying "Orion: undone"');
  console.log(`toast ${undone}`);
  step("undone");

  await expect("refused");
  const refused = await waitToast((t) => t.includes("protected path"), "of the refused write");
  console.log(`toast ${refused}`);
  step("refused-seen");

  // The person edits the file and does not save; the agent writes it.
  // Quick open would only focus the diff editor, which shows the file too.
  await palette("View: Close All Editors");
  await quickOpen(path.basename(target));
  await page.waitForFunction((n) => (document.querySelector(".tab.active")?.textContent ?? "").trim().startsWith(n) && !document.querySelector(".tab.active").textContent.includes("↔"), { timeout: 30_000 }, path.basename(target));
  // Quick open leaves the focus in the editor.
  await sleep(300);
  await page.keyboard.down("Control");
  await page.keyboard.press("Home");
  await page.keyboard.up("Control");
  await page.keyboard.type("my unsaved line\n");
  await page.waitForSelector(".tab.dirty", { timeout: 30_000 });
  step("dirty");
  await expect("written-dirty");
  const dirty = await waitToast((t) => t.includes("while you have unsaved changes"), "about the unsaved changes");
  console.log(`toast ${dirty}`);
  const buttons = await page.evaluate((msg) => {
    const item = [...document.querySelectorAll(".notifications-toasts .notification-list-item")].find((i) => i.textContent.includes(msg));
    return [...item.querySelectorAll(".monaco-button")].map((b) => b.textContent.trim()).filter((t) => t);
  }, "while you have unsaved changes");
  console.log(`buttons ${JSON.stringify(buttons)}`);
  if (!buttons.includes("Compare") || !buttons.includes("Undo the agent's write")) throw new Error(`the warning offers ${JSON.stringify(buttons)}`);
  await clickToastButton("while you have unsaved changes", "Compare");
  await page.waitForFunction(() => (document.querySelector(".tab.active")?.textContent ?? "").includes("your unsaved changes"), { timeout: 30_000 });
  step("compared");

  // oriond stops: the status bar says so; it comes back: Orion reconnects.
  await expect("killed");
  console.log(`status ${await waitStatus((t) => t.includes("Orion: not running"), '"Orion: not running"')}`);
  step("down");
  await expect("restarted");
  console.log(`status ${await waitStatus((t) => t.includes("Orion") && !t.includes("not running"), "Orion connected again", 30_000)}`);
  step("up");

  // Show Trace… from the palette: pick the session, read its trace.
  await showTraceOf(path.basename(target), "session.write");
  // Open Dashboard runs the person's orionctl (a recorder here, with no
  // dashboard), not the one the workspace's settings name.
  await palette("Orion: Open Dashboard");
  console.log(`toast ${await waitToast((t) => t.includes(`this orionctl (${process.env.ORION_E2E_ORIONCTL}) has no dashboard`), "about the person's orionctl")}`);
  step("trace");

  // The file changes on disk under a streaming session: the conflict's
  // warning, then Finalize Anyway through its modal confirmation.
  await expect("conflict");
  const conflict = await waitToast((t) => t.includes("on disk while an agent was writing it"), "about the conflict");
  console.log(`toast ${conflict}`);
  await clickToastButton("on disk while an agent was writing it", "Finalize Anyway");
  await page.waitForSelector(".monaco-dialog-box", { visible: true, timeout: 30_000 });
  const dialog = await page.$eval(".monaco-dialog-box", (d) => d.textContent.trim());
  console.log(`dialog ${dialog}`);
  await page.evaluate(() => {
    [...document.querySelectorAll(".monaco-dialog-box .monaco-button")].find((b) => b.textContent.trim() === "Finalize Anyway").click();
  });
  console.log(`toast ${await waitToast((t) => t.startsWith("Orion: wrote"), 'saying "Orion: wrote"')}`);
  step("forced");

  // An agent's turn, written by a shell and not through Orion: Undo Last
  // Turn confirms with every file named, then puts them back.
  await expect("turn");
  await palette("Orion: Undo Last Turn");
  await page.waitForSelector(".monaco-dialog-box", { visible: true, timeout: 30_000 });
  const turnDialog = await page.$eval(".monaco-dialog-box", (d) => d.textContent.trim());
  console.log(`dialog ${turnDialog}`);
  if (!turnDialog.includes("turn.txt: removed (the turn created it)") || !turnDialog.includes("plan.md: its content before the turn put back")) {
    throw new Error(`the turn's confirmation does not name its files: ${turnDialog}`);
  }
  await page.evaluate(() => {
    [...document.querySelectorAll(".monaco-dialog-box .monaco-button")].find((b) => b.textContent.trim() === "Undo Turn").click();
  });
  console.log(`toast ${await waitToast((t) => t.startsWith("Orion: turn undone: 2 reverted"), 'saying "Orion: turn undone: 2 reverted"')}`);
  step("turn-undone");
  await browser.close();
  process.exit(0);
} catch (err) {
  // The screenshot first: the test reads "fail" and keeps it.
  try {
    await page.screenshot({ path: path.join(shots, "failure.png") });
  } catch {}
  console.log(`fail ${String(err?.message ?? err).replace(/\n/g, " ")}`);
  await browser.close();
  process.exit(1);
}
