// The shell blocks of a Markdown file, for tests that run what a document
// tells an operator to paste (test/docs/readme.test.ts and the tests a block
// names with `<!-- verified by test/FILE -->`).

export interface ShellBlock {
  line: number;
  code: string;
  verifiedBy: string | null;
}

/** The ```sh / ```bash / ```shell blocks of a Markdown text, with the test that runs each elsewhere, if any. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const blocks: ShellBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    if (!/^```(sh|bash|shell)\s*$/.test(lines[i]!)) continue;
    const start = i;
    const body: string[] = [];
    for (i += 1; i < lines.length && !/^```\s*$/.test(lines[i]!); i += 1) body.push(lines[i]!);
    // The HTML comments right above the fence (a block may carry a second marker of its own test's).
    let verified: RegExpExecArray | null = null;
    for (let previous = start - 1; previous >= 0 && !verified; previous -= 1) {
      const text = lines[previous]!.trim();
      if (text === '') continue;
      if (!text.startsWith('<!--')) break;
      verified = /<!--\s*verified by (\S+)\s*-->/.exec(text);
    }
    blocks.push({ line: start + 1, code: body.join('\n'), verifiedBy: verified ? verified[1]! : null });
  }
  return blocks;
}
