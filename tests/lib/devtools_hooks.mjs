// devtools_hooks.mjs: module hooks for devtools_heap.mjs: an import of
// X.js inside chrome-devtools-frontend's sources is X.ts when only that
// exists, transpiled to JavaScript (types stripped) as it is loaded; and
// the modules DevTools' build generates (not in the package) are given as
// its generator writes them for the one locale en-US.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const generated = {
  'core/i18n/locales.js': `export const LOCALES = ['en-US'];
export const BUNDLED_LOCALES = ['en-US'];
export const DEFAULT_LOCALE = 'en-US';
export const REMOTE_FETCH_PATTERN = '';
export const LOCAL_FETCH_PATTERN = './locales/@LOCALE@.json';
`,
};
const genKey = (href) => Object.keys(generated).find(k =>
  href.endsWith('/front_end/' + k));

let ts;
export function initialize({ modules }) {
  ts = createRequire(modules + '/')('typescript');
}

export async function resolve(spec, ctx, next) {
  if (spec.endsWith('.js') && (spec.startsWith('.') || spec.startsWith('/') ||
				spec.startsWith('file:'))) {
    const url = new URL(spec, ctx.parentURL);
    if (url.href.includes('/front_end/') && !existsSync(fileURLToPath(url))) {
      const t = new URL(url.href.replace(/\.js$/, '.ts'));
      if (existsSync(fileURLToPath(t)) || genKey(url.href))
	return { url: existsSync(fileURLToPath(t)) ? t.href : url.href,
		 shortCircuit: true };
    }
  }
  return next(spec, ctx);
}

export async function load(url, ctx, next) {
  const g = genKey(url);
  if (g) return { format: 'module', source: generated[g], shortCircuit: true };
  if (url.endsWith('.ts')) {
    const src = readFileSync(fileURLToPath(url), 'utf8');
    const js = ts.transpileModule(src, { compilerOptions: {
      module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022,
      useDefineForClassFields: true } }).outputText;
    return { format: 'module', source: js, shortCircuit: true };
  }
  return next(url, ctx);
}
