// Imports a folded-stack file with speedscope's own importer (from its npm package) and prints what it read, as JSON.
// SPDX-License-Identifier: MIT
//
// usage: node speedscope_import.mjs SPEEDSCOPE_BUNDLE.js FOLDED_FILE
//
// The package ships one browser bundle, not modules: the importer of the
// collapsed-stack format is found in it by the log line that names it
// ("Importing as collapsed stack format"), the bundle is cut before the
// app starts, and the importer, the function making a profile group of
// its result and the importer module's lazy initializer are exported to
// us. Then the file is imported as speedscope would, and the profile's
// name, total weight and per-frame totals are printed:
//   {"total": N, "frames": {"name": total weight, ...}, "group": "name"}
// Exit 1 when the importer refuses the file, 99 when the bundle is not
// understood (another speedscope version).
import fs from 'node:fs'
import vm from 'node:vm'

const [bundlePath, foldedPath] = process.argv.slice(2)
const src = fs.readFileSync(bundlePath, 'utf8')
const text = fs.readFileSync(foldedPath, 'utf8')

const call = /console\.log\("Importing as collapsed stack format"\),(\w+)\((\w+)\((\w+)\)\)/.exec(src)
if (!call) { console.error('no collapsed-stack importer in the bundle'); process.exit(99) }
const [, grp, imp] = call
const init = new RegExp(`function ${imp}\\(\\w+\\)\\{.*?\\}var (\\w+)=\\w+\\(\\(\\)=>\\{`).exec(src)
const boot = src.lastIndexOf('console.log(`speedscope v')
if (!init || boot < 0) { console.error('bundle layout not understood'); process.exit(99) }
const code = src.slice(0, boot) + `globalThis.__ss={imp:${imp},grp:${grp},init:${init[1]}};})();`

// A browser-like global good enough for the bundle's top level: any
// missing name is a harmless callable stub.
function stub () {
  return new Proxy(function () {}, {
    get: (t, k) => (k === Symbol.toPrimitive ? () => '' : k in t ? t[k] : stub()),
    apply: () => stub(),
    construct: () => stub(),
  })
}
const ctx = { console, Math, Date, JSON, Map, Set, WeakMap, Promise, Symbol, Array, Object,
  Number, String, RegExp, Error, TypeError, Uint8Array, Uint16Array, Uint32Array, Int32Array,
  Float32Array, Float64Array, ArrayBuffer, DataView, TextDecoder, TextEncoder, BigInt,
  parseInt, parseFloat, isNaN, isFinite, setTimeout, clearTimeout, queueMicrotask }
ctx.window = ctx
ctx.self = ctx
ctx.globalThis = ctx
for (const k of ['document', 'navigator', 'location', 'localStorage', 'performance',
  'requestAnimationFrame', 'matchMedia', 'addEventListener', 'history', 'devicePixelRatio',
  'Worker', 'Blob', 'URL', 'fetch', 'XMLHttpRequest', 'HTMLElement', 'Image'])
  ctx[k] = stub()
vm.createContext(ctx)
vm.runInContext(code, ctx)

const ss = ctx.__ss
ss.init()
const file = {
  splitLines: function * () { yield * text.split('\n') },
  firstChunk: () => text.slice(0, 4096),
}
const profile = ss.imp(file)
const group = ss.grp(profile)
if (!profile || !group) { console.error('speedscope imported nothing'); process.exit(1) }
const frames = {}
profile.forEachFrame(f => { frames[f.name] = f.getTotalWeight() })
console.log(JSON.stringify({ total: profile.getTotalWeight(), frames, group: group.name }))
