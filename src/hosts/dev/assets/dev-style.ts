/** The page's stylesheet, served at `/assets/dev.css`. */
export const DEV_STYLE = `
:root { --fg:#1d2330; --muted:#6b7385; --line:#e3e6ee; --bg:#f7f8fb; --accent:#3454d1; --ok:#1f8a4c; --warn:#b7791f; --bad:#c53030; font-family: system-ui, sans-serif; font-size: 14px; color: var(--fg); background: var(--bg); }
body { margin: 0; }
a { color: var(--accent); text-decoration: none; } a:hover { text-decoration: underline; }
code, pre, textarea { font-family: ui-monospace, Menlo, monospace; font-size: 12.5px; }
.top { display:flex; gap:24px; align-items:center; padding:10px 20px; background:#111827; }
.top a { color:#e5e7eb; margin-right:16px; } .top .brand { font-weight:700; color:#fff; }
.page { display:flex; gap:20px; padding:20px; align-items:flex-start; }
main { flex:1; min-width:0; }
aside.chat { width:340px; position:sticky; top:12px; background:#fff; border:1px solid var(--line); border-radius:8px; padding:12px; }
h1 { font-size:20px; margin:0; } h2 { font-size:16px; margin:18px 0 8px; } h3 { font-size:14px; margin:12px 0 6px; }
.heading { display:flex; gap:12px; align-items:center; justify-content:space-between; margin-bottom:8px; }
.meta, .note, .empty { color:var(--muted); } .err { color:var(--bad); }
.button, button { background:var(--accent); color:#fff; border:0; border-radius:6px; padding:6px 12px; cursor:pointer; font-size:13px; }
button.reject { background:var(--bad); } button.approve { background:var(--ok); } button:disabled { opacity:.5; cursor:wait; }
table { border-collapse:collapse; width:100%; background:#fff; border:1px solid var(--line); }
th, td { text-align:left; padding:6px 10px; border-bottom:1px solid var(--line); vertical-align:top; }
th { background:#f0f2f7; font-weight:600; }
.status { display:inline-block; padding:1px 8px; border-radius:10px; font-size:12px; background:#e5e7eb; }
.s-completed { background:#d7f2e2; color:var(--ok); } .s-suspended { background:#fdf0d5; color:var(--warn); } .s-failed, .s-blocked { background:#fbdcdc; color:var(--bad); } .s-running { background:#dde5fd; color:var(--accent); }
.turn { background:#fff; border:1px solid var(--line); border-radius:8px; padding:10px 14px; margin:12px 0; }
.turn h2 { margin-top:0; } .turn .input { font-style:italic; white-space:pre-wrap; }
.waterfall { border-top:1px solid var(--line); }
.wf-row { display:grid; grid-template-columns: minmax(220px, 38%) 1fr 70px; gap:8px; align-items:center; padding:3px 0; border-bottom:1px dashed #eef0f5; }
.wf-row.d-1 .wf-label { padding-left:16px; }
.wf-label .kind { display:inline-block; min-width:58px; font-size:11px; text-transform:uppercase; color:var(--muted); }
.wf-label .name { font-weight:600; overflow-wrap:anywhere; }
.wf-detail { color:var(--muted); font-size:12px; overflow-wrap:anywhere; white-space:pre-wrap; }
.wf-track { position:relative; height:12px; background:#f3f4f8; border-radius:3px; }
.wf-bar { position:absolute; top:1px; height:10px; min-width:2px; border-radius:2px; background:#9aa5c0; }
.wf-bar.mark { width:3px !important; background:#111827; }
.k-round .wf-bar { background:#c7d2fe; } .k-model .wf-bar { background:#6366f1; } .k-hook .wf-bar { background:#14b8a6; } .k-tool .wf-bar { background:#f59e0b; } .k-suspended .wf-bar { background:#fbbf24; }
.k-commit .wf-bar.mark { background:var(--ok); } .failed .wf-bar, .k-error .wf-bar.mark { background:var(--bad); } .failed .name { color:var(--bad); }
.wf-time { text-align:right; color:var(--muted); font-size:12px; }
.approvals { background:#fffaf0; border:1px solid #f6d58e; border-radius:8px; padding:10px 14px; }
.approval { border-top:1px solid #f6e3b4; padding:8px 0; } .approval:first-of-type { border-top:0; }
.approval label { display:block; margin:6px 0; color:var(--muted); }
.approval textarea, .approval input, .chat textarea { display:block; width:100%; box-sizing:border-box; margin-top:4px; border:1px solid var(--line); border-radius:6px; padding:6px; }
.actions { display:flex; gap:8px; margin-top:6px; }
.error { color:var(--bad); min-height:1em; margin:6px 0 0; white-space:pre-wrap; }
pre.args, pre { background:#f3f4f8; padding:8px; border-radius:6px; overflow:auto; white-space:pre-wrap; overflow-wrap:anywhere; }
.transcript { list-style:none; padding:0; }
.msg { background:#fff; border:1px solid var(--line); border-radius:8px; padding:8px 12px; margin:6px 0; }
.msg .who { font-size:11px; text-transform:uppercase; color:var(--muted); } .msg .text { white-space:pre-wrap; overflow-wrap:anywhere; }
.r-user { border-left:3px solid var(--accent); } .r-assistant { border-left:3px solid var(--ok); } .r-tool { border-left:3px solid #f59e0b; }
.call .tool, .approval .tool { font-weight:600; }
.stream { min-height:2em; max-height:160px; }
.live-log { font-size:12px; color:var(--muted); padding-left:0; list-style:none; max-height:260px; overflow:auto; }
.plugin { background:#fff; border:1px solid var(--line); border-radius:8px; padding:10px 14px; margin:12px 0; }
.desc { color:var(--muted); font-size:12px; }
`;
