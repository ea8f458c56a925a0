/**
 * Child module of root-import-weight.spec.ts: imports every entry an application may add to
 * the root without meaning to load a heavy package — the kernel's other entries and each
 * built-in plugin family (`trellis/plugins/<name>`), which the root no longer loads.
 */
import '../../../../models.js';
import '../../../../stores.js';
import '../../../../governance.js';
import '../../../../host.js';
import '../../../../plugins/middleware/index.js';
import '../../../../plugins/permissions/index.js';
import '../../../../plugins/content-safety/index.js';
import '../../../../plugins/billing/index.js';
import '../../../../plugins/reflection/index.js';
import '../../../../plugins/memory/index.js';
import '../../../../plugins/retrieval/index.js';
import '../../../../plugins/observation/index.js';
