// Deterministic generator of varied text lines for the tokenizer oracle test.
//   node gen_lines.mjs [--count 10000] [--seed 1] [--tokenizer tokenizer.json] > lines.jsonl
// Each output line is {"text": "..."}; the same arguments always give the same bytes. The lines
// aim at every place a tokenizer can go wrong: scripts and languages, code and indentation, long
// white-space runs, CRLF and lone CR, tabs, Unicode white space, emoji sequences, digits of many
// scripts, contractions in any case (including the long s, which case-folds to s), NFC-sensitive
// sequences, special and added tokens (whole, partial, adjacent, glued to words), and lone UTF-16
// surrogates, which JSON can carry and which every implementation must turn into U+FFFD.
// With --tokenizer, that file's added tokens (up to 40 of them, spread over its list) join the
// special tokens, whole and cut, so every family's own specials are exercised.
import fs from 'node:fs';
const args = process.argv.slice(2);
let count = 10000, seed = 1, tokenizerPath = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--count') count = Number(args[++i]);
  else if (args[i] === '--seed') seed = Number(args[++i]);
  else if (args[i] === '--tokenizer') tokenizerPath = args[++i];
}

// mulberry32: small, fast, deterministic.
let state = seed >>> 0;
function rand() {
  state = (state + 0x6d2b79f5) >>> 0;
  let t = state;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const int = (n) => Math.floor(rand() * n);
const pick = (a) => a[int(a.length)];
const cp = (c) => String.fromCodePoint(c);

const words = ('the of and to in is was for that with as on by at from his her they this are ' +
  'which be or had not but have one you were all we there been their has would when more will ' +
  'if no out so said what up its about into than them can only other new some could time these ' +
  'two may then do first any my now such like our over man me even most made after also did ' +
  'many before must through back years where much your way well down should because each just ' +
  'those people how too little state good very make world still own see men work long get here ' +
  'between both life being under never day same another know while last might us great old year ' +
  'tokenizer gradient checkpoint deadlock rank epoch NCCL FSDP throughput utilization watt ' +
  'HELLO World GPU B300 Qwen3 naïve café résumé coöperate façade').split(' ');
const contractions = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'M",
  "'LL", "'lL", "'D", "'ſ", "'Ŀ", "’s", "'x", "''", "'"];
const foreign = [
  'Le cœur a ses raisons que la raison ne connaît point.',
  'Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. STRAẞE',
  '¿Dónde está la biblioteca? ¡Olé! Ñandú pingüino',
  'Съешь же ещё этих мягких французских булок, да выпей чаю.',
  'Γαζέες καὶ μυρτιὲς δὲν θὰ βρῶ πιὰ στὸ χρυσαφὶ ξέφωτο.',
  'صِف خَلقَ خَودِ كَمِثلِ الشَمسِ إِذ بَزَغَت — يَحظى الضَجيعُ بِها نَجلاءَ مِعطارِ',
  'עטלף אבק נס דרך מזגן שהתפוצץ כי חם',
  'ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम',
  'เป็นมนุษย์สุดประเสริฐเลิศคุณค่า กว่าบรรดาฝูงสัตว์เดรัจฉาน',
  '我能吞下玻璃而不伤身体。深度学习模型的训练需要大量的计算资源。',
  'いろはにほへと ちりぬるを わかよたれそ つねならむ カタカナ ｶﾀｶﾅ 漢字',
  '다람쥐 헌 쳇바퀴에 타고파. 한국어 토크나이저 테스트',
  'Tiếng Việt có dấu: Người ta thường nói rằng học tập là chìa khóa.',
  'İstanbul ığdır ŞEHİR çağ ğüş IıİiÇçŞşĞğÖöÜü',
  'ქართული ენა Հայերեն լեզու ᐃᓄᒃᑎᑐᑦ ᏣᎳᎩ ꦧꦱꦗꦮ',
  'አማርኛ ቋንቋ ትግርኛ ᠮᠣᠩᠭᠣᠯ ᠬᠡᠯᠡ བོད་སྐད་ ខ្មែរ ລາວ မြန်မာ',
  'தமிழ் తెలుగు ಕನ್ನಡ മലയാളം ગુજરાતી ਪੰਜਾਬੀ বাংলা ଓଡ଼ିଆ සිංහල',
];
const code = [
  'def train(model, loader):\n    for step, batch in enumerate(loader):\n        loss = model(**batch).loss\n        loss.backward()\n',
  '#include <vector>\nint main() {\n\tstd::vector<int> v{1, 2, 3};\n\treturn v.size() == 3 ? 0 : 1;\n}\n',
  '{"rank": 3, "world_size": 16, "steps": [1200, 1187], "ok": true, "name": "qwen3-32b"}',
  'if [ "$RANK" -eq 0 ]; then\r\n  torchrun --nproc_per_node=8 train.py --lr=3e-4\r\nfi\r\n',
  'SELECT id, COUNT(*) AS n FROM runs WHERE state = \'hung\' GROUP BY id HAVING n > 10;',
  'const f = (x) => x?.y ?? [...xs].map((a, i) => a ** i) >>> 0; // arrow\n',
  'fn main() -> Result<(), Box<dyn Error>> { let x: Vec<u8> = vec![0xFF; 4]; Ok(()) }',
  '<div class="row"><span id=\'a\'>&amp;&lt;&gt;</span></div>\n<!-- comment -->',
  '    return {\n        "loss": loss.item(),\n        "lr": sched.get_last_lr()[0],\n    }\n',
  'x=1;y=2;z=x+y*3-4/5%6&7|8^9~0<<1>>2&&a||b!c==d!=e<=f>=g',
  '\t\t\tif (a) {\n\t\t\t\tb();\n\t\t\t}\n',
  'https://huggingface.co/Qwen/Qwen3-32B/resolve/main/tokenizer.json?download=true#L10',
  'user@example.com, C:\\Users\\admin\\AppData\\Local\\Temp\\x.log, /var/log/syslog.1.gz',
];
const special = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<think>', '</think>',
  '<tool_call>', '</tool_call>', '<|vision_start|>', '<|fim_prefix|>', '<|box_end|>',
  '<|im_sta', '<|im_end', '<think', '|>', '<|', '<<|im_end|>>', '<|im_end|><|im_start|>',
  '<|endoftext|><|endoftext|>', '</think>\n\n'];
if (tokenizerPath) {
  const added = (JSON.parse(fs.readFileSync(tokenizerPath, 'utf8')).added_tokens ?? [])
    .map((a) => a.content).filter((c) => c.length > 0);
  const step = Math.max(1, Math.floor(added.length / 40));
  for (let i = 0; i < added.length; i += step) {
    const c = added[i];
    special.push(c, c + c, c.slice(0, Math.max(1, c.length - 1)), ' ' + c + ' ');
  }
}
const spaces = [' ', '  ', '   ', '\t', '\n', '\r\n', '\r', '\n\n', ' \n', '\t \n', '\u00a0',
  '\u0085', '\u1680', '\u2000', '\u2003', '\u2009', '\u200a', '\u2028', '\u2029', '\u202f',
  '\u205f', '\u3000', '\u180e', '\u200b', '\ufeff', '\u000b', '\u000c', ' \u00a0 ', '\u3000\u3000'];
const emoji = ['😀', '👍🏽', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇰🇷', '🇺🇸', '❤️', '✔︎', '🤖', '🔥🔥🔥',
  '👩🏾‍💻', '🧑‍🚀', '1️⃣', '©', '™', '☕', '🫠', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢', '𝟘𝟙𝟚', '🀄', '♠♥♦♣'];
const digits = () => pick([
  () => String(int(1e9)), () => (rand() * 1e4).toFixed(int(6)), () => '3.14159265358979323846',
  () => '1,234,567.89', () => '٣٤٥ ۱۲۳', () => '१२३४', () => '１２３４５', () => 'x²+y³=z¹⁰',
  () => '½ ¼ ⅞ Ⅻ ⅻ ⑩ ㊿', () => '0x' + int(1 << 30).toString(16), () => '2024-06-01T12:00:00Z',
  () => '9'.repeat(1 + int(40)), () => '१०० ௰ ໒', () => '1e-9 -0.0 +inf NaN',
])();
// NFC-sensitive: decomposed forms that NFC composes, and singletons NFC replaces.
const nfc = ['e\u0301', 'A\u030a', '\u212b', '\u2126', 'o\u0308\u0304', '\u1100\u1161\u11a8',
  'n\u0303', 'a\u0328\u0301', '\u0958', 'q\u0307\u0323', 'ﬁ', 'ǅ', 'Ⅸ', 'ｶﾞ', 'カ\u3099',
  '\u0041\u0300\u0301', 'e\u0301\u0301', '\u0301 start'];
// Lone surrogates and reversed pairs (invalid UTF-16, invalid UTF-8 once encoded).
const broken = ['\udc80', '\ud800', 'x\ud83dy', '\ude00\ud83d', '\ud83d\ud83d\ude00', 'ab\udfff',
  '\udbff\udbff'];
// Code points from wide ranges, restricted to characters assigned by Unicode 14 (the Unicode
// version of Debian bookworm's PCRE2), so that letters are letters for every implementation.
const ranges = [[0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x5ff],
  [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f],
  [0x2190, 0x23ff], [0x2500, 0x27bf], [0x3040, 0x30ff], [0x4e00, 0x9fff], [0xac00, 0xd7a3],
  [0xff00, 0xffef], [0x1f300, 0x1f64f], [0x1d400, 0x1d7ff], [0x20000, 0x2a6df]];
const randomChars = (n) => {
  let s = '';
  for (let i = 0; i < n; i++) {
    const [lo, hi] = pick(ranges);
    s += cp(lo + int(hi - lo + 1));
  }
  return s;
};
const randomAscii = (n) => {
  let s = '';
  for (let i = 0; i < n; i++) s += cp(rand() < 0.2 ? pick([9, 10, 13, 32, 32, 32]) : 33 + int(94));
  return s;
};
const caseVary = (w) => pick([w, w.toUpperCase(), w[0].toUpperCase() + w.slice(1),
  [...w].map((c) => (rand() < 0.5 ? c.toUpperCase() : c)).join('')]);
const sentence = () => {
  const n = 3 + int(18);
  const ws = [];
  for (let i = 0; i < n; i++) {
    let w = caseVary(pick(words));
    if (rand() < 0.12) w += pick(contractions);
    if (rand() < 0.08) w += pick([',', '.', ';', ':', '!', '?', '...', ')', '"', '—']);
    ws.push(w);
  }
  return ws.join(' ') + pick(['.', '!', '?', '', '\n']);
};

const fragments = [
  () => sentence(), () => sentence(), () => sentence(), () => pick(foreign), () => pick(code),
  () => pick(special), () => pick(spaces), () => pick(spaces).repeat(1 + int(12)), () => pick(emoji),
  () => digits(), () => pick(nfc), () => pick(broken), () => randomChars(1 + int(30)),
  () => randomAscii(1 + int(60)), () => pick(words) + pick(contractions),
  () => pick(contractions) + pick(words), () => ' '.repeat(1 + int(200)),
  () => '\t'.repeat(1 + int(40)), () => '\n'.repeat(1 + int(30)), () => '\r\n'.repeat(1 + int(10)),
  () => pick(['=', '-', '*', '#', '_', '.']).repeat(1 + int(120)),
  () => pick(words).repeat(2 + int(30)), () => pick(special) + pick(words),
  () => pick(words) + pick(special) + pick(words),
];

const out = [];
for (let i = 0; i < count; i++) {
  let text;
  const kind = i % 10;
  if (kind === 0) {
    text = sentence() + ' ' + sentence();  // plain prose
  } else if (kind === 1) {
    text = pick(code) + pick(code);
  } else {
    const n = 1 + int(8);
    const parts = [];
    for (let k = 0; k < n; k++) parts.push(pick(fragments)());
    const glue = rand() < 0.5 ? '' : pick(spaces);
    text = parts.join(glue);
  }
  if (i === 0) text = '';  // the empty string is a valid record too
  out.push(JSON.stringify({ text }));
}
process.stdout.write(out.join('\n') + '\n');
