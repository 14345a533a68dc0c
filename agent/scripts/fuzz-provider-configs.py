#!/usr/bin/python3
"""Random provider config directories for differential fuzzing against Nova's
loader (not committed as fixtures: failures found here become cases in
gen-provider-config-corpus.py).

    /usr/bin/python3 agent/scripts/fuzz-provider-configs.py chars SEED COUNT OUT/cases
    /usr/bin/python3 agent/scripts/fuzz-provider-configs.py entries SEED COUNT OUT/cases
    /usr/bin/python3 agent/scripts/nova-provider-config-verdicts.py OUT/cases > OUT/verdicts.json
    npx tsx agent/scripts/compare-provider-config-verdicts.ts OUT

`chars` mutates hand-written files character by character (the YAML reader);
`entries` writes files of random entries, values and versions (Nova's rules).
"""
import os, random, shutil, sys
mode = sys.argv[1]; seed = int(sys.argv[2]); n = int(sys.argv[3]); out = sys.argv[4]
def chars_mode():
    rnd = random.Random(seed)
    BASES = [
    """%YAML 1.1
    --- # doc
    meta:
      schema_version: >-
        1.0
    notes: |
      line one
        indented
      done
    providers:
      - identification: {name: "multi
          line name"}
        traits:
          additional:
            - 'CUSTOM_ONE'   # first
            - !!str CUSTOM_TWO
      - ? identification
        : uuid: "aa884151-b4e2-4e82-9fd4-81cfcd01abb9"
        inventories:
          additional: [
            {CUSTOM_R: {total: 3,
                        reserved: 1}},
          ]
    """,
    """meta:
        schema_version: '1.0'
    providers:
    -   identification:
            name: n-1
        traits:
            additional:
            -   CUSTOM_A
            -   CUSTOM_B
    -   identification: &id
            name: n-2
        inventories:
            additional:
            -   CUSTOM_X: &x {total: 1, step_size: 1}
                CUSTOM_Y: *x
    """,
    """meta:
      schema_version: '1.0'
    providers:
      - identification:
          uuid: aa884151-b4e2-4e82-9fd4-81cfcd01abb9
        inventories:
          additional:
            - CUSTOM_LLC:
                total: 22
                reserved: 2
                allocation_ratio: 1.5
        traits:
          additional:
            - CUSTOM_P_STATE
            - CUSTOM_B
      - identification:
          name: host-1
        traits:
          additional: [CUSTOM_X, CUSTOM_Y]
    """,
    """meta: {schema_version: '1.0'}
    providers:
    - identification: {uuid: $COMPUTE_NODE}
      inventories: {additional: [{CUSTOM_A: {total: 4, max_unit: 2}}, {CUSTOM_B: {total: 1}}]}
    - identification: {name: "gpu host"}
      traits: {additional: ['CUSTOM_GPU']}
    """,
    """# provider config
    ---
    meta:
      schema_version: "1.0"   # quoted
    base: &inv
      total: 8
      reserved: 0
    providers:
      - identification:
          name: n1
        inventories:
          additional:
            - CUSTOM_R1: *inv
            - CUSTOM_R2:
                <<: *inv
                step_size: 2
    ...
    """,
    ]
    SCALARS = ["yes", "no", "on", "Off", "~", "null", "", "1.0", "'1.0'", "1", "0x1F", "010", "1:30", "1_000", "1e3", "1.0e+3", ".inf",
               "-.inf", ".nan", "2001-12-14", '"CUSTOM_A\\n"', "!!str 1", "!!int '5'", "!!float 2", "!!binary aGk=", "[]", "{}", "''", '""',
               "CUSTOM_Z", "VCPU", "custom_a", "$COMPUTE_NODE", "=", "<<", "!custom x", "|\n  CUSTOM_A", ">-\n  a", "- a", "? a", "&z 5", "*inv",
               "'it''s'", '"\\x41"', "0b11", "+5", "-0", "9" * 25, "1.", ".5", "12:30:45", "0o7", "true", "Y", "n", "NULL"]
    CHARS = ['\t', '#', ':', '-', '[', ']', '{', '}', '"', "'", '\r', '\x85', '\u2028', '&', '*', '!', '|', '>', '%', '@', '`', ' ', '\n', ',', '?',
             '\ufeff', '\x00', '\x1b', '\xa0', '\\', '~', '=']
    def mutate(text):
        for _ in range(rnd.randint(1, 3)):
            kind = rnd.random()
            if kind < 0.35:
                # replace a scalar value after ': ' or '- '
                spots = [i for i in range(len(text) - 1) if text[i:i+2] in (': ', '- ')]
                if not spots: continue
                i = rnd.choice(spots) + 2
                j = i
                while j < len(text) and text[j] not in '\n,]}': j += 1
                text = text[:i] + rnd.choice(SCALARS) + text[j:]
            elif kind < 0.6:
                i = rnd.randrange(len(text) + 1)
                text = text[:i] + rnd.choice(CHARS) + text[i:]
            elif kind < 0.75:
                i = rnd.randrange(len(text)); text = text[:i] + text[i+1:]
            elif kind < 0.85:
                lines = text.split('\n'); k = rnd.randrange(len(lines))
                lines[k] = (' ' * rnd.randint(0, 3) + lines[k]) if rnd.random() < 0.5 else lines[k][rnd.randint(0, 2):]
                text = '\n'.join(lines)
            else:
                lines = text.split('\n'); k = rnd.randrange(len(lines)); lines.insert(k, lines[rnd.randrange(len(lines))]); text = '\n'.join(lines)
        return text
    shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
    for c in range(n):
        d = os.path.join(out, f'f{seed}-{c:05d}'); os.makedirs(d)
        open(os.path.join(d, 'a.yaml'), 'wb').write(mutate(rnd.choice(BASES)).encode('utf-8', 'surrogatepass'))


def entries_mode():
    rnd = random.Random(seed)
    _choice = rnd.choice
    GOOD = {}
    def pick(pool):
        good = GOOD.get(id(pool))
        return _choice(good) if good and rnd.random() < 0.85 else _choice(pool)
    U = ['aa884151-b4e2-4e82-9fd4-81cfcd01abb9', 'AA884151-B4E2-4E82-9FD4-81CFCD01ABB9', '5213b75d-9260-42a6-b236-f39b0fd10561']
    IDS = [f"uuid: {U[0]}", f"uuid: {U[1]}", f"uuid: '{U[2]}'", "uuid: $COMPUTE_NODE", "uuid: '$COMPUTE_NODE'", "name: host-1", "name: '$COMPUTE_NODE'",
           f"name: {U[0]}", "name: 'host 2'", "name: yes", "name: 123", "name: '123'", "name: ~", "name: \"a\\tb\"", "name: héte", "name: !!str 5",
           "name: host-1\n      uuid: $COMPUTE_NODE", "id: x", "name: ''", "name: 2020-02-02", "name: |\n        multi\n        line", "name: >-\n        fold"]
    RCS = ['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_', 'VCPU', 'custom_a', "'CUSTOM_Q'", '"CUSTOM_A\\n"', 'CUSTOM_LONG_' + 'X' * 240, '1', '~', 'yes', "'CUSTOM A'"]
    VALS = ['1', '0', '-1', '5.0', '5.5', "'5'", 'yes', '~', '0x10', '010', '1_000', '1:30', '1e3', '1.0e+3', '.inf', '.nan', '!!int "7"', '!!float 3', '[1]', '{}', '99999999999999999999']
    FIELDS = ['total', 'reserved', 'min_unit', 'max_unit', 'step_size', 'allocation_ratio', 'bogus']
    TRAITS = ['CUSTOM_T', 'CUSTOM_T', 'CUSTOM_U', 'HW_CPU_X86_AVX', 'custom_t', '"CUSTOM_T\\n"', '5', '~', "'CUSTOM_Q'", '[CUSTOM_T]', 'CUSTOM_' + 'Y' * 249]
    VERS = ["'1.0'", '"1.0"', '1.0', "'1.1'", "'2.0'", "'1.01'", "'1.10'", '1', "'1'", '!!str 1.0', "'1.0 '", '"1.0\\n"']
    GOOD[id(IDS)] = IDS[:8]; GOOD[id(RCS)] = RCS[:3] + RCS[5:8]; GOOD[id(VALS)] = VALS[:5] + ['0x10', '010', '1_000', '1:30', '1.0e+3', '!!int "7"', '!!float 3', '99999999999999999999']
    GOOD[id(FIELDS)] = FIELDS[:6]; GOOD[id(TRAITS)] = TRAITS[:3] + ['"CUSTOM_T\\n"', "'CUSTOM_Q'"]; GOOD[id(VERS)] = VERS[:2] + ["'1.1'", '!!str 1.0', '"1.0\\n"']
    def inv(style):
        items = []
        for _ in range(rnd.choice([0, 1, 1, 2, 3])):
            rc = pick(RCS)
            fields = [('total', pick(VALS))] if rnd.random() < 0.85 else []
            for _ in range(rnd.choice([0, 0, 1, 2])):
                fields.append((pick(FIELDS), pick(VALS)))
            if style == 'flow':
                items.append('{%s: {%s}}' % (rc, ', '.join(f'{k}: {v}' for k, v in fields)))
            else:
                items.append(f'        - {rc}:\n' + ''.join(f'            {k}: {v}\n' for k, v in fields) if fields else f'        - {rc}: {{}}\n')
        if style == 'flow':
            return '    inventories: {additional: [%s]}\n' % ', '.join(items)
        if rnd.random() < 0.1:
            return '    inventories:\n      additional:\n        CUSTOM_M: {total: 1}\n'
        return '    inventories:\n      additional:' + (' []\n' if not items else '\n' + ''.join(items))
    def traits(style):
        ts = [pick(TRAITS) for _ in range(rnd.choice([0, 1, 1, 2, 3]))]
        if style == 'flow': return '    traits: {additional: [%s]}\n' % ', '.join(ts)
        return '    traits:\n      additional:' + (' []\n' if not ts else '\n' + ''.join(f'        - {t}\n' for t in ts))
    def provider():
        style = rnd.choice(['block', 'block', 'flow'])
        text = f'  - identification:\n      {pick(IDS)}\n'
        if rnd.random() < 0.7: text += inv(style)
        if rnd.random() < 0.6: text += traits(style)
        if rnd.random() < 0.1: text += '    extra: {a: 1}\n'
        return text
    def file():
        text = f'meta:\n  schema_version: {pick(VERS)}\n'
        if rnd.random() < 0.1: text += 'other: [1, 2]\n'
        text += 'providers:\n' + ''.join(provider() for _ in range(rnd.choice([0, 1, 1, 2, 3])))
        if rnd.random() < 0.05: text = '---\n' + text
        return text
    shutil.rmtree(out, ignore_errors=True); os.makedirs(out)
    for c in range(n):
        d = os.path.join(out, f'g{seed}-{c:05d}'); os.makedirs(d)
        for k in range(rnd.choice([1, 1, 1, 2, 3])):
            open(os.path.join(d, f'{rnd.choice("abc")}{k}.yaml'), 'w').write(file())


if __name__ == "__main__":
    {"chars": chars_mode, "entries": entries_mode}[mode]()
