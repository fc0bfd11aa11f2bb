// devtools_heap.mjs: load a .heapsnapshot with Chrome DevTools' own loader
// (npm's chrome-devtools-frontend: HeapSnapshotLoader, JSHeapSnapshot,
// run from its TypeScript sources, transpiled as they are imported by
// typescript's transpileModule) and print what DevTools makes of it, one
// JSON object: node count, total size (the root's retained size), and for
// each id given, the node's name, self and retained size, and its path
// from the root as DevTools' retainers view gives it (from the root down,
// each step to a retainer one nearer the root, the first such by node
// order), each step as its edge's type and name and the name of the node
// it reaches; and the edges that reach it (retainers).
//
//   node devtools_heap.mjs NODE_MODULES FILE [all] [ID...]
//
// With "all", also the retained size of every node: [[id, size]...].
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';

import { resolve as pathResolve } from 'node:path';
const [mods, file, ...ids] = process.argv.slice(2);
const modules = mods && pathResolve(mods);
if (!modules || !file) {
  console.error('usage: devtools_heap.mjs NODE_MODULES FILE [ID...]');
  process.exit(2);
}
// ES2024's Promise.withResolvers, which DevTools uses and node 20 lacks.
if (!Promise.withResolvers) Promise.withResolvers = function () {
  let resolve, reject;
  const promise = new this((a, b) => { resolve = a; reject = b; });
  return { promise, resolve, reject };
};
register('./devtools_hooks.mjs', import.meta.url,
	 { data: { modules } });
const fe = pathToFileURL(modules + '/chrome-devtools-frontend/front_end/').href;
const Loader = await import(fe + 'entrypoints/heap_snapshot_worker/HeapSnapshotLoader.js');
const HS = await import(fe + 'entrypoints/heap_snapshot_worker/HeapSnapshot.js');

const loader = new Loader.HeapSnapshotLoader(undefined);
const text = readFileSync(file, 'utf8');
for (let i = 0; i < text.length; i += 1 << 20) loader.write(text.slice(i, i + (1 << 20)));
loader.close();
const channel = new MessageChannel();
new HS.SecondaryInitManager(channel.port2);
const snap = await loader.buildSnapshot(channel.port1);
channel.port1.close();
channel.port2.close();

const out = { nodeCount: snap.nodeCount, totalSize: snap.totalSize, nodes: {},
	      retained: [] };
// The retained size of every node, by id (the first argument "all").
if (ids[0] === 'all') {
  ids.shift();
  for (let it = snap.allNodes(); it.hasNext(); it.next())
    out.retained.push([it.item().id(), it.item().retainedSize()]);
}
const byId = new Map();
for (let it = snap.allNodes(); it.hasNext(); it.next())
  byId.set(it.item().id(), it.item().nodeIndex);
for (const id of ids) {
  const idx = byId.get(Number(id));
  if (idx === undefined) { out.nodes[id] = null; continue; }
  const node = snap.createNode(idx);
  const rec = { name: node.name(), type: node.type(), self: node.selfSize(),
		retained: node.retainedSize(), distance: node.distance(),
		path: [], retainers: [] };
  for (let r = node.retainers(); r.hasNext(); r.next())
    rec.retainers.push({ type: r.item().type(), name: String(r.item().name()),
			 from: r.item().node().name() });
  // Up the retainers, each step to one nearer the root, as the retainers
  // view's first line does.
  let cur = node;
  for (let guard = 0; guard < 100000 && cur.distance() > 1; guard++) {
    let best = null;
    for (let r = cur.retainers(); r.hasNext(); r.next()) {
      const e = r.item();
      if (e.isWeak()) continue;
      const from = e.node();
      if (from.distance() === cur.distance() - 1 &&
	  (!best || from.nodeIndex < best.node().nodeIndex)) best = e.clone();
    }
    if (!best) break;
    rec.path.unshift({ type: best.type(), name: String(best.name()),
		       to: cur.name() });
    cur = best.node();
  }
  if (cur.distance() === 1) {
    for (let r = cur.retainers(); r.hasNext(); r.next())
      if (r.item().node().nodeIndex === snap.rootNodeIndex) {
	rec.path.unshift({ type: r.item().type(), name: String(r.item().name()),
			   to: cur.name() });
	break;
      }
  }
  out.nodes[id] = rec;
}
console.log(JSON.stringify(out));
