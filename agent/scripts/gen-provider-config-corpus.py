#!/usr/bin/python3
"""Writes the provider config corpus judged by Nova's loader
(agent/test/fixtures/provider-config-corpus/cases/<case>/...): Nova's own unit
test data, then valid, invalid and hostile files (versions, identification,
inventories, traits, YAML 1.1 scalars, tags, encodings, several files).

    /usr/bin/python3 agent/scripts/gen-provider-config-corpus.py [--nova-tests DIR] OUT_DIR

Deterministic: the same input writes the same files. Needs python3-yaml.
"""
import argparse
import os
import shutil
import sys

import yaml

U1 = 'aa884151-b4e2-4e82-9fd4-81cfcd01abb9'
U2 = '5213b75d-9260-42a6-b236-f39b0fd10561'
DEFAULT_NOVA_TESTS = [
    '/usr/lib/python3/dist-packages/nova/tests/unit/compute',
    '/tmp/debpl/n/usr/lib/python3/dist-packages/nova/tests/unit/compute',
]

cases = {}


def case(name, files):
    """files: {filename: str | bytes | None (a directory)}"""
    assert name not in cases, name
    cases[name] = files


def doc(providers, version="'1.0'", extra=''):
    """A file with `meta.schema_version` and a providers block (YAML text, indented by 2)."""
    return f"meta:\n  schema_version: {version}\n{extra}providers:\n{providers}"


def entry(ident, inventories=None, traits=None, extra=''):
    text = f"  - identification:\n      {ident}\n"
    if inventories is not None:
        text += f"    inventories:\n      additional:\n{inventories}"
    if traits is not None:
        text += f"    traits:\n      additional:\n{traits}"
    return text + extra


def inv(rc='CUSTOM_LLC', body='total: 22'):
    lines = body.split('\n')
    return f"        - {rc}:\n" + ''.join(f"            {line}\n" for line in lines)


def tr(*traits):
    return ''.join(f"        - {t}\n" for t in traits)


def simple(field, value):
    """One provider with one inventory whose `field` is `value` (raw YAML)."""
    body = f"total: 10\n{field}: {value}" if field != 'total' else f"total: {value}"
    return {'a.yaml': doc(entry(f"uuid: {U1}", inv(body=body)))}


def nova_unit_cases(tests_dir):
    data = os.path.join(tests_dir, 'provider_config_data')
    for kind in ('validation_error_test_data', 'validation_success_test_data'):
        with open(os.path.join(data, 'v1', kind + '.yaml')) as f:
            for name, spec in yaml.safe_load(f).items():
                case(f'nova-unit-{name}', {'provider.yaml': yaml.safe_dump(spec['config'] or {}, sort_keys=False)})
    for kind in ('validate_provider_good_config', 'validate_provider_bad_config'):
        with open(os.path.join(data, kind + '.yaml')) as f:
            for name, spec in yaml.safe_load(f).items():
                config = {'meta': {'schema_version': '1.0'}, **spec['sample']}
                case(f'nova-unit-{name}', {'provider.yaml': yaml.safe_dump(config, sort_keys=False)})
    with open(os.path.join(data, 'v1', 'example_provider.yaml')) as f:
        case('nova-unit-example-provider', {'example_provider.yaml': f.read()})
    # test_get_provider_configs_* (the same data as files)
    p1 = entry('name: EXAMPLE_RESOURCE_PROVIDER1', inv('CUSTOM_EXAMPLE_RESOURCE_CLASS1', 'total: 100\nreserved: 0\nmin_unit: 1\nmax_unit: 10\nstep_size: 1\nallocation_ratio: 1'), tr('CUSTOM_TRAIT1'))
    p2 = entry('name: EXAMPLE_RESOURCE_PROVIDER2', inv('CUSTOM_EXAMPLE_RESOURCE_CLASS2', 'total: 100\nreserved: 0\nmin_unit: 1\nmax_unit: 10\nstep_size: 1\nallocation_ratio: 1'), tr('CUSTOM_TRAIT2'))
    case('nova-unit-two-files', {'file1.yaml': doc(p1), 'file2.yaml': doc(p2)})
    case('nova-unit-two-files-name-conflict', {'file1.yaml': doc(p1), 'file2.yaml': doc(p1)})
    u = entry(f'uuid: {U1}', inv('CUSTOM_EXAMPLE_RESOURCE_CLASS1', 'total: 100'), tr('CUSTOM_TRAIT1'))
    case('nova-unit-one-file-uuid-conflict', {'file1.yaml': doc(u + u.replace('CLASS1', 'CLASS2').replace('TRAIT1', 'TRAIT2'))})
    case('nova-unit-noop-provider', {'p.yaml': doc(
        entry('name: NAME1', inv('CUSTOM_RESOURCE_CLASS', 'total: 1'))
        + "  - identification:\n      name: NAME_453764\n    inventories:\n      additional: []\n    traits:\n      additional: []\n")})


def version_cases():
    body = entry(f'uuid: {U1}', inv())
    versions = {
        'quoted-1.0': "'1.0'", 'double-quoted-1.0': '"1.0"', 'float-1.0': '1.0', 'int-1': '1', 'quoted-1': "'1'",
        'quoted-1.1': "'1.1'", 'quoted-1.5': "'1.5'", 'quoted-1.10': "'1.10'", 'quoted-1.01': "'1.01'",
        'quoted-2.0': "'2.0'", 'quoted-0.9': "'0.9'", 'quoted-99.99': "'99.99'", 'leading-space': "' 1.0'",
        'trailing-space': "'1.0 '", 'trailing-newline': '"1.0\\n"', 'inner-space': "'1 .0'", 'plus': "'+1.0'",
        'minus': "'-1.0'", 'three-parts': "'1.0.0'", 'dot-only-minor': "'1.'", 'no-major': "'.0'", 'v-prefix': "'v1.0'",
        'comma': "'1,0'", 'fullwidth': "'１.０'", 'underscore-minor': "'1.0_0'", 'underscore-major': "'1_0.0'",
        'x-separator': "'1x0'", 'true': 'true', 'null': 'null', 'empty': "''", 'list': '[1, 0]', 'mapping': '{major: 1}',
        'exp-string': '1.0e0', 'exp-float': '1.0e+0', 'float-1.10': '1.10', 'str-tag': '!!str 1.0',
        'sexagesimal': '1:00', 'float-2.0': '2.0', 'quoted-10.0': "'10.0'", 'quoted-1.0-tab': '"1.0\\t"',
        'arabic-digit-minor': "'1.١'", 'block-literal': '|\n    1.0', 'block-strip': '|-\n    1.0', 'folded': '>\n    1.0',
        'plain-1.9': '1.9', 'quoted-1.99': "'1.99'", 'int-tag-1': '!!int 1', 'timestamp': '2001-12-14',
    }
    for name, v in versions.items():
        case(f'version-{name}', {'a.yaml': doc(body, version=v)})
    case('version-meta-missing', {'a.yaml': 'providers:\n' + body})
    case('version-meta-null', {'a.yaml': 'meta:\nproviders:\n' + body})
    case('version-meta-list', {'a.yaml': "meta:\n  - schema_version: '1.0'\nproviders:\n" + body})
    case('version-meta-string', {'a.yaml': "meta: '1.0'\nproviders:\n" + body})
    case('version-schema-version-missing', {'a.yaml': 'meta:\n  other: 1\nproviders:\n' + body})
    case('version-meta-extra-keys', {'a.yaml': "meta:\n  schema_version: '1.0'\n  author: me\n  yes: no\nproviders:\n" + body})
    case('version-2.0-invalid-body', {'a.yaml': doc('  - nonsense\n', version="'2.0'")})
    case('version-1.1-unknown-field', {'a.yaml': doc(body.replace('    inventories:', '    future_field: 1\n    inventories:'), version="'1.1'")})


def document_cases():
    body = entry(f'uuid: {U1}', inv())
    case('doc-empty-file', {'a.yaml': ''})
    case('doc-whitespace-only', {'a.yaml': '\n\n   \n'})
    case('doc-comment-only', {'a.yaml': '# nothing here\n'})
    case('doc-start-only', {'a.yaml': '---\n'})
    case('doc-end-only', {'a.yaml': '...\n'})
    case('doc-top-list', {'a.yaml': "- meta:\n    schema_version: '1.0'\n"})
    case('doc-top-scalar', {'a.yaml': 'hello\n'})
    case('doc-top-int', {'a.yaml': '42\n'})
    case('doc-meta-only', {'a.yaml': "meta:\n  schema_version: '1.0'\n"})
    case('doc-providers-empty-list', {'a.yaml': doc('  []\n')})
    case('doc-providers-null', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders:\n"})
    case('doc-providers-mapping', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders:\n  a: 1\n"})
    case('doc-providers-string', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders: CUSTOM_X\n"})
    case('doc-source-file-key', {'a.yaml': doc(body, extra='__source_file: a.yaml\n')})
    case('doc-source-file-null', {'a.yaml': doc(body, extra='__source_file:\n')})
    case('doc-unknown-top-keys', {'a.yaml': doc(body, extra='comment: hello\nnumbers: [1, 2]\non: off\n')})
    case('doc-document-marker', {'a.yaml': '---\n' + doc(body)})
    case('doc-document-end-marker', {'a.yaml': '---\n' + doc(body) + '...\n'})
    case('doc-two-documents', {'a.yaml': doc(body) + '---\n' + doc(body)})
    case('doc-yaml-directive-1.1', {'a.yaml': '%YAML 1.1\n---\n' + doc(body)})
    case('doc-yaml-directive-1.2', {'a.yaml': '%YAML 1.2\n---\n' + doc(body)})
    case('doc-yaml-directive-2.0', {'a.yaml': '%YAML 2.0\n---\n' + doc(body)})
    case('doc-tag-directive', {'a.yaml': '%TAG !e! tag:example.com,2000:\n---\n' + doc(body)})
    case('doc-flow-style', {'a.yaml': "{meta: {schema_version: '1.0'}, providers: [{identification: {uuid: '%s'}, inventories: {additional: [{CUSTOM_A: {total: 1}}]}}]}\n" % U1})
    case('doc-json', {'a.json.yaml': '{"meta": {"schema_version": "1.0"}, "providers": [{"identification": {"name": "n1"}, "traits": {"additional": ["CUSTOM_A"]}}]}'})
    case('doc-json-float-version', {'a.yaml': '{"meta": {"schema_version": 1.0}, "providers": []}'})
    case('doc-no-trailing-newline', {'a.yaml': doc(body).rstrip('\n')})
    case('doc-crlf', {'a.yaml': doc(body).replace('\n', '\r\n').encode()})
    case('doc-cr-only', {'a.yaml': doc(body).replace('\n', '\r').encode()})
    case('doc-bom', {'a.yaml': b'\xef\xbb\xbf' + doc(body).encode()})
    case('doc-bom-middle', {'a.yaml': doc(body).encode() + b'x: \xef\xbb\xbfy\n'})
    case('doc-utf16', {'a.yaml': doc(body).encode('utf-16')})
    case('doc-latin1', {'a.yaml': doc(entry('name: caf\xe9', inv())).encode('latin-1')})
    case('doc-latin1-in-comment', {'a.yaml': (doc(body) + '# caf\xe9\n').encode('latin-1')})
    case('doc-truncated-utf8', {'a.yaml': doc(body).encode() + b'# \xe2\x82'})
    case('doc-nul', {'a.yaml': doc(body) + '# a\x00b\n'})
    case('doc-escape-char', {'a.yaml': doc(body) + 'x: "a"\x1b\n'})
    case('doc-del-char', {'a.yaml': doc(body) + '# \x7f\n'})
    case('doc-c1-char', {'a.yaml': doc(body) + '# \x90\n'})
    case('doc-nel-char', {'a.yaml': doc(body) + 'x: a\x85b\n'})
    case('doc-line-separator', {'a.yaml': doc(body) + 'x: a\u2028b\n'})
    case('doc-private-use', {'a.yaml': doc(body) + 'x: a\ue000b\n'})
    case('doc-nonchar-fffe', {'a.yaml': doc(body) + '# \ufffe\n'})
    case('doc-astral', {'a.yaml': doc(entry('name: rocket-\U0001F680', inv()))})
    case('doc-tab-indent', {'a.yaml': doc(body).replace('    inventories', '\tinventories')})
    case('doc-tab-after-colon', {'a.yaml': doc(body).replace('total: 22', 'total:\t22')})
    case('doc-tab-in-quotes', {'a.yaml': doc(body) + 'x: "a\tb"\n'})
    case('doc-tab-in-comment', {'a.yaml': doc(body) + '#\tcomment\n'})
    case('doc-tab-trailing', {'a.yaml': doc(body).replace('total: 22', 'total: 22\t')})
    case('doc-tab-in-plain', {'a.yaml': doc(body) + 'x: a\tb\n'})
    case('doc-tab-blank-line', {'a.yaml': doc(body) + '\t\n'})
    case('doc-tab-before-comment', {'a.yaml': doc(body).replace('total: 22', 'total: 22\t# c')})
    case('doc-tab-in-block-scalar', {'a.yaml': doc(body) + 'x: |\n  a\tb\n'})
    case('doc-bad-indent', {'a.yaml': "meta:\n  schema_version: '1.0'\n providers: []\n"})
    case('doc-unclosed-quote', {'a.yaml': doc(body) + "x: 'abc\n"})
    case('doc-unclosed-flow', {'a.yaml': doc(body) + 'x: [1, 2\n'})
    case('doc-reserved-indicator', {'a.yaml': doc(body) + 'x: @foo\n'})
    case('doc-backtick', {'a.yaml': doc(body) + 'x: `foo\n'})
    case('doc-duplicate-top-keys', {'a.yaml': doc(body) + "meta:\n  schema_version: '2.0'\n"})
    case('doc-duplicate-top-keys-fixes', {'a.yaml': "meta:\n  schema_version: '2.0'\n" + doc(body)})
    case('doc-duplicate-providers', {'a.yaml': doc(body) + 'providers: []\n'})
    case('doc-long-key', {'a.yaml': doc(body) + 'k' * 1100 + ': 1\n'})
    case('doc-long-explicit-key', {'a.yaml': doc(body) + '? ' + 'k' * 1100 + '\n: 1\n'})
    case('doc-complex-key', {'a.yaml': doc(body) + '? [a, b]\n: 1\n'})
    case('doc-mapping-key', {'a.yaml': doc(body) + '? {a: 1}\n: 1\n'})
    case('doc-null-key', {'a.yaml': doc(body) + '~: 1\n'})
    case('doc-int-key', {'a.yaml': doc(body) + '1: 1\n'})
    case('doc-equals-value', {'a.yaml': doc(body) + 'x: =\n'})
    case('doc-equals-quoted', {'a.yaml': doc(body) + "x: '='\n"})
    case('doc-merge-scalar', {'a.yaml': doc(body) + 'x:\n  <<: 1\n'})
    case('doc-merge-key-top', {'a.yaml': "base: &b\n  meta:\n    schema_version: '1.0'\n<<: *b\nproviders:\n" + body})
    case('doc-anchor-unknown-alias', {'a.yaml': doc(body) + 'x: *nope\n'})
    case('doc-many-aliases', {'a.yaml': doc(body) + 'a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c]\n'})
    case('doc-custom-tag', {'a.yaml': doc(body) + 'x: !custom 1\n'})
    case('doc-custom-tag-unused-key', {'a.yaml': doc(body) + 'x: !!python/object:os.system {}\n'})
    case('doc-python-tuple', {'a.yaml': doc(body) + 'x: !!python/tuple [1, 2]\n'})
    case('doc-verbatim-str-tag', {'a.yaml': doc(body) + 'x: !<tag:yaml.org,2002:str> 1\n'})
    case('doc-binary', {'a.yaml': doc(body) + 'x: !!binary aGVsbG8=\n'})
    case('doc-bad-binary', {'a.yaml': doc(body) + 'x: !!binary "not base64!"\n'})
    case('doc-set', {'a.yaml': doc(body) + 'x: !!set {a, b}\n'})
    case('doc-omap', {'a.yaml': doc(body) + 'x: !!omap [a: 1, b: 2]\n'})
    case('doc-pairs', {'a.yaml': doc(body) + 'x: !!pairs [a: 1, a: 2]\n'})
    case('doc-bad-omap', {'a.yaml': doc(body) + 'x: !!omap [1, 2]\n'})
    case('doc-timestamp', {'a.yaml': doc(body) + 'x: 2001-12-14t21:59:43.10-05:00\n'})
    case('doc-invalid-date', {'a.yaml': doc(body) + 'x: 2001-13-45\n'})
    case('doc-int-tag-bad', {'a.yaml': doc(body) + 'x: !!int abc\n'})
    case('doc-float-tag-bad', {'a.yaml': doc(body) + 'x: !!float abc\n'})
    case('doc-bool-tag-bad', {'a.yaml': doc(body) + 'x: !!bool maybe\n'})
    case('doc-null-tag-value', {'a.yaml': doc(body) + 'x: !!null abc\n'})
    case('doc-map-tag-on-seq', {'a.yaml': doc(body) + 'x: !!map [1]\n'})
    case('doc-seq-tag-on-scalar', {'a.yaml': doc(body) + 'x: !!seq 1\n'})
    case('doc-str-tag-on-map', {'a.yaml': doc(body) + 'x: !!str {a: 1}\n'})
    case('doc-double-quote-escapes', {'a.yaml': doc(body) + 'x: "\\x41\\u0042\\U00000043\\N\\_\\L\\P\\e\\0\\a"\n'})
    case('doc-bad-escape', {'a.yaml': doc(body) + 'x: "\\q"\n'})
    case('doc-escaped-slash', {'a.yaml': doc(body) + 'x: "\\/"\n'})
    case('doc-escaped-tab', {'a.yaml': doc(body) + 'x: "\\	"\n'})
    case('doc-deep-nesting', {'a.yaml': doc(body) + 'x: ' + '[' * 200 + ']' * 200 + '\n'})
    case('doc-huge-int-unused', {'a.yaml': doc(body) + 'x: ' + '9' * 400 + '\n'})
    case('doc-anchor-on-providers', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders: &p\n" + body + 'again: *p\n'})
    case('doc-plain-multiline', {'a.yaml': doc(body) + 'x: a\n  b\n'})
    case('doc-question-plain', {'a.yaml': doc(body) + 'x: ?a\n'})
    case('doc-colon-in-plain', {'a.yaml': doc(body) + 'x: a:b\n'})
    case('doc-flow-colon', {'a.yaml': doc(body) + 'x: {a:b}\n'})
    case('doc-flow-trailing-comma', {'a.yaml': doc(body) + 'x: [a, b, ]\n'})
    case('doc-flow-empty-entry', {'a.yaml': doc(body) + 'x: [a, , b]\n'})
    case('doc-flow-implicit-pair', {'a.yaml': doc(body) + 'x: [a: 1, b]\n'})
    case('doc-dash-no-space', {'a.yaml': doc(body) + 'x:\n  -a\n'})
    case('doc-key-indent-mismatch', {'a.yaml': doc(body) + 'x:\n    a: 1\n  b: 2\n'})
    case('doc-seq-same-indent', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders:\n- identification:\n    name: n1\n  traits:\n    additional:\n    - CUSTOM_A\n"})
    case('doc-comment-no-space', {'a.yaml': doc(body) + 'x: a#b\n'})
    case('doc-comment-after-quote', {'a.yaml': doc(body) + "x: 'a'#b\n"})
    case('doc-anchor-name-odd', {'a.yaml': doc(body) + 'x: &a: 1\n'})


def identification_cases():
    i = inv()
    idents = {
        'uuid-lower': f'uuid: {U1}', 'uuid-upper': f'uuid: {U1.upper()}', 'uuid-braces': f"uuid: '{{{U1}}}'",
        'uuid-no-dashes': f"uuid: {U1.replace('-', '')}", 'uuid-trailing-newline': f'uuid: "{U1}\\n"',
        'uuid-trailing-space': f"uuid: '{U1} '", 'uuid-leading-space': f"uuid: ' {U1}'", 'uuid-short': 'uuid: aa884151-b4e2',
        'uuid-int': 'uuid: 12345', 'uuid-null': 'uuid:', 'uuid-compute-node': 'uuid: $COMPUTE_NODE',
        'uuid-compute-node-quoted': "uuid: '$COMPUTE_NODE'", 'uuid-compute-node-lower': 'uuid: $compute_node',
        'uuid-compute-node-newline': 'uuid: "$COMPUTE_NODE\\n"', 'uuid-urn': f'uuid: urn:uuid:{U1}',
        'uuid-nonhex': 'uuid: gg884151-b4e2-4e82-9fd4-81cfcd01abb9',
        'name-compute-node': 'name: $COMPUTE_NODE', 'name-plain': 'name: compute-1', 'name-200': 'name: ' + 'n' * 200,
        'name-201': 'name: ' + 'n' * 201, 'name-200-astral': 'name: ' + '\U0001F680' * 200,
        'name-201-astral': 'name: ' + '\U0001F680' * 201, 'name-200-accented': 'name: ' + '\xe9' * 200,
        'name-int': 'name: 123', 'name-float': 'name: 1.5', 'name-bool-yes': 'name: yes', 'name-bool-on': 'name: on',
        'name-y': 'name: y', 'name-null-tilde': 'name: ~', 'name-empty': "name: ''", 'name-space': "name: ' '",
        'name-date': 'name: 2020-01-01', 'name-list': 'name: [a]', 'name-uuid-shaped': f'name: {U2}',
        'name-str-tag-int': 'name: !!str 123', 'name-newline': 'name: "a\\n"', 'name-unicode': 'name: h\xf4te-\u4e2d',
        'name-equals': 'name: =', 'name-binary': 'name: !!binary aGVsbG8=', 'name-sexagesimal': 'name: 1:20',
        'name-octal': 'name: 010', 'name-hex': 'name: 0x1F', 'name-exp': 'name: 1e3', 'name-dot-inf': 'name: .inf',
        'name-nul-escape': 'name: "a\\0b"', 'name-multiline-folded': 'name: >\n        a\n        b',
        'both': f'name: n1\n      uuid: {U1}', 'unknown-method': 'id: n1', 'unknown-and-name': 'name: n1\n      id: n2',
        'name-twice': 'name: n1\n      name: n2', 'uuid-then-name-same-key': f'uuid: {U1}\n      uuid: {U2}',
        'int-key': '1: n1', 'null-key': '~: n1', 'bool-key': 'yes: n1',
    }
    for name, ident in idents.items():
        case(f'ident-{name}', {'a.yaml': doc(entry(ident, i))})
    case('ident-empty-mapping', {'a.yaml': doc("  - identification: {}\n    traits:\n      additional: [CUSTOM_A]\n")})
    case('ident-null', {'a.yaml': doc("  - identification:\n    traits:\n      additional: [CUSTOM_A]\n")})
    case('ident-list', {'a.yaml': doc("  - identification: [name, n1]\n    traits:\n      additional: [CUSTOM_A]\n")})
    case('ident-string', {'a.yaml': doc("  - identification: n1\n    traits:\n      additional: [CUSTOM_A]\n")})
    case('ident-missing', {'a.yaml': doc("  - traits:\n      additional: [CUSTOM_A]\n")})
    case('ident-provider-null', {'a.yaml': doc("  - \n")})
    case('ident-provider-string', {'a.yaml': doc("  - just a string\n")})
    case('ident-provider-list', {'a.yaml': doc("  - [1, 2]\n")})
    case('ident-provider-unknown-keys', {'a.yaml': doc(entry('name: n1', i, extra='    description: a gpu host\n    priority: 10\n'))})
    case('ident-only-no-op', {'a.yaml': doc("  - identification:\n      name: n1\n")})


def inventory_cases():
    # Field values (raw YAML) for total and allocation_ratio.
    values = {
        'int': '5', 'zero': '0', 'negative': '-1', 'plus': '+5', 'float-integral': '5.0', 'float-frac': '5.5',
        'string': "'5'", 'bool-yes': 'yes', 'bool-true': 'true', 'null': 'null', 'empty': '', 'hex': '0x1F',
        'octal': '010', 'octal-0o': '0o10', 'binary': '0b101', 'underscore': '1_000', 'sexagesimal': '1:30',
        'float-sexagesimal': '1:30.5', 'exp-no-dot': '1e3', 'exp-dot-signed': '1.0e+3', 'exp-dot-unsigned': '1.0e3',
        'exp-negative': '1.5e-3', 'dot-leading': '.5', 'dot-trailing': '5.', 'inf': '.inf', 'neg-inf': '-.inf',
        'nan': '.nan', 'inf-upper': '.Inf', 'huge-int': '9' * 30, 'huge-float': '1.0e+400', 'leading-zero-9': '09',
        'int-tag': "!!int '7'", 'float-tag': '!!float 7', 'str-tag': '!!str 7', 'list': '[5]', 'mapping': '{v: 5}',
        'timestamp': '2001-12-14', 'minus-zero': '-0', 'float-minus-zero': '-0.0', 'int-underscore-float': '1_0.5',
        'hex-underscore': '0x_1F', 'octal-8': '08', 'binary-tag-str': '!!binary MQ==', 'int-max53': '9007199254740993',
    }
    for name, value in values.items():
        case(f'inv-total-{name}', simple('total', value))
        case(f'inv-ratio-{name}', simple('allocation_ratio', value))
    for field in ('reserved', 'min_unit', 'max_unit', 'step_size'):
        case(f'inv-{field}-int', simple(field, '1'))
        case(f'inv-{field}-float-integral', simple(field, '2.0'))
        case(f'inv-{field}-float', simple(field, '2.5'))
        case(f'inv-{field}-string', simple(field, "'1'"))
    case('inv-all-fields', simple('allocation_ratio', '1.5\nreserved: 1\nmin_unit: 1\nmax_unit: 5\nstep_size: 1'))
    case('inv-unknown-field', simple('generation', '1'))
    case('inv-no-total', {'a.yaml': doc(entry(f'uuid: {U1}', inv(body='reserved: 1')))})
    case('inv-empty-inventory', {'a.yaml': doc(entry(f'uuid: {U1}', '        - CUSTOM_A: {}\n'))})
    case('inv-null-inventory', {'a.yaml': doc(entry(f'uuid: {U1}', '        - CUSTOM_A:\n'))})
    case('inv-list-inventory', {'a.yaml': doc(entry(f'uuid: {U1}', '        - CUSTOM_A: [1]\n'))})
    rcs = {
        'custom': 'CUSTOM_A', 'custom-bare': 'CUSTOM_', 'standard': 'VCPU', 'memory': 'MEMORY_MB', 'lower': 'custom_a',
        'mixed': 'CUSTOM_a', 'dash': 'CUSTOM-A', 'digits': 'CUSTOM_123', 'len-255': 'CUSTOM_' + 'A' * 248,
        'len-256': 'CUSTOM_' + 'A' * 249, 'newline-quoted': '"CUSTOM_A\\n"', 'space-quoted': "'CUSTOM_A '",
        'int-key': '1', 'null-key': '~', 'bool-key': 'yes', 'float-key': '1.5', 'quoted-int-key': "'1'",
        'unicode': 'CUSTOM_\xc9', 'nova-bang': "'INVALID_RESOURCE_CLASS_NAME_!@#$%^&*()_+'", 'custom-lowercase-prefix': 'Custom_A',
        'digit-only': "'123'", 'underscore-only': '_',
    }
    for name, rc in rcs.items():
        case(f'inv-rc-{name}', {'a.yaml': doc(entry(f'uuid: {U1}', f'        - {rc}:\n            total: 1\n'))})
    forms = {
        'mapping-form': "      additional:\n        CUSTOM_A:\n          total: 1\n",
        'empty-list': '      additional: []\n', 'empty-mapping': '      additional: {}\n', 'null': '      additional:\n',
        'item-empty-mapping': '      additional: [{}]\n', 'item-empty-string': "      additional: ['']\n",
        'item-string': '      additional: [CUSTOM_A]\n', 'item-empty-list': '      additional: [[]]\n',
        'item-list-of-custom': '      additional: [[CUSTOM_A]]\n', 'item-list-of-standard': '      additional: [[VCPU]]\n',
        'item-int': '      additional: [42]\n', 'item-null': '      additional: [~]\n', 'item-bool': '      additional: [true]\n',
        'item-float': '      additional: [1.5]\n', 'item-list-of-int': '      additional: [[1]]\n',
        'item-list-of-mapping': '      additional: [[{CUSTOM_A: {total: 1}}]]\n',
        'item-binary-empty': "      additional: [!!binary '']\n", 'item-binary': '      additional: [!!binary aGVsbG8=]\n',
        'item-set-custom': '      additional: [!!set {CUSTOM_A}]\n', 'item-set-standard': '      additional: [!!set {VCPU}]\n',
        'item-omap-empty': '      additional: [!!omap []]\n', 'item-omap': '      additional: [!!omap [CUSTOM_A: {total: 1}]]\n',
        'item-timestamp': '      additional: [2001-12-14]\n', 'item-string-custom-chars': "      additional: ['CUSTOM_']\n",
        'string': '      additional: CUSTOM_A\n', 'int': '      additional: 5\n',
        'two-items-same-rc': '      additional:\n        - CUSTOM_A: {total: 1}\n        - CUSTOM_A: {total: 2, reserved: 1}\n',
        'one-item-two-rcs': '      additional:\n        - CUSTOM_A: {total: 1}\n          CUSTOM_B: {total: 2}\n',
        'duplicate-rc-key': '      additional:\n        - CUSTOM_A: {total: 1}\n          CUSTOM_A: {total: 3}\n',
        'second-item-invalid': '      additional:\n        - CUSTOM_A: {total: 1}\n        - VCPU: {total: 1}\n',
        'second-item-no-total': '      additional:\n        - CUSTOM_A: {total: 1}\n        - CUSTOM_B: {}\n',
        'alias-reuse': '      additional:\n        - &i CUSTOM_A: {total: 1}\n        - CUSTOM_B: {total: 2}\n',
        'anchor-inventory': '      additional:\n        - CUSTOM_A: &inv {total: 4, reserved: 1}\n          CUSTOM_B: *inv\n',
        'merge-key': '      additional:\n        - CUSTOM_A: &base {total: 4, reserved: 1}\n          CUSTOM_B:\n            <<: *base\n            total: 8\n',
        'merge-key-list': '      additional:\n        - CUSTOM_A: &b1 {total: 4}\n          CUSTOM_C: &b2 {reserved: 1, total: 9}\n          CUSTOM_B:\n            <<: [*b1, *b2]\n',
        'merge-unknown-field': '      additional:\n        - CUSTOM_A: &base {total: 4}\n          CUSTOM_B:\n            <<: *base\n            bogus: 1\n',
    }
    for name, text in forms.items():
        case(f'inv-form-{name}', {'a.yaml': doc(f"  - identification:\n      uuid: {U1}\n    inventories:\n{text}")})
    case('inv-section-null', {'a.yaml': doc(f"  - identification:\n      uuid: {U1}\n    inventories:\n")})
    case('inv-section-list', {'a.yaml': doc(f"  - identification:\n      uuid: {U1}\n    inventories: []\n")})
    case('inv-section-unknown-adjective', {'a.yaml': doc(f"  - identification:\n      uuid: {U1}\n    inventories:\n      removed: [CUSTOM_X]\n")})
    case('inv-section-unknown-adjective-bad', {'a.yaml': doc(f"  - identification:\n      uuid: {U1}\n    inventories:\n      removed: 5\n      additional: [{{CUSTOM_A: {{total: 1}}}}]\n")})


def trait_cases():
    traits = {
        'custom': 'CUSTOM_A', 'custom-bare': 'CUSTOM_', 'standard': 'HW_CPU_X86_AVX', 'compute-node': 'COMPUTE_NODE',
        'lower': 'custom_a', 'dash': 'CUSTOM-A', 'newline': '"CUSTOM_A\\n"', 'two-newlines': '"CUSTOM_A\\n\\n"',
        'cr': '"CUSTOM_A\\r"', 'space': "'CUSTOM_A '", 'int': '5', 'null': '~', 'bool': 'yes', 'list': '[CUSTOM_A]',
        'mapping': 'CUSTOM_A: x', 'len-255': 'CUSTOM_' + 'A' * 248, 'len-256': 'CUSTOM_' + 'A' * 249,
        'unicode': 'CUSTOM_\xc9', 'block-literal': '|\n          CUSTOM_A', 'block-strip': '|-\n          CUSTOM_A',
        'block-keep': '|+\n          CUSTOM_A\n', 'folded': '>\n          CUSTOM_A', 'binary': '!!binary Q1VTVE9NX0E=',
        'str-tag-int': '!!str 1', 'nova-bang': "'INVALID_TRAIT_NAME_!@#$%^&*()_+'", 'fullwidth': 'ＣUSTOM_A',
    }
    for name, t in traits.items():
        case(f'trait-{name}', {'a.yaml': doc(entry(f'uuid: {U1}', traits=f'        - {t}\n'))})
    forms = {
        'duplicates': '        - CUSTOM_A\n        - CUSTOM_B\n        - CUSTOM_A\n',
        'order': '        - CUSTOM_Z\n        - CUSTOM_A\n', 'mixed-invalid': '        - CUSTOM_A\n        - HW_CPU_X86_AVX\n        - VCPU_TRAIT\n',
    }
    for name, t in forms.items():
        case(f'trait-form-{name}', {'a.yaml': doc(entry(f'uuid: {U1}', traits=t))})
    for name, text in {
        'mapping-form': '      additional:\n        CUSTOM_A: true\n', 'empty-list': '      additional: []\n',
        'null': '      additional:\n', 'string': '      additional: CUSTOM_A\n', 'flow': '      additional: [CUSTOM_A, CUSTOM_B]\n',
        'section-null': None, 'set-tag': '      additional: !!set {CUSTOM_A}\n', 'unknown-adjective': '      removed: [CUSTOM_A]\n',
    }.items():
        body = f"  - identification:\n      name: n1\n    traits:\n{text}" if text is not None else "  - identification:\n      name: n1\n    traits:\n"
        case(f'trait-form-{name}', {'a.yaml': doc(body)})


def multi_file_cases():
    a = entry(f'uuid: {U1}', inv('CUSTOM_A'))
    b = entry(f'uuid: {U2}', inv('CUSTOM_B'))
    cn = entry('uuid: $COMPUTE_NODE', inv('CUSTOM_C'), tr('CUSTOM_T'))
    n1 = entry('name: compute-1', traits=tr('CUSTOM_N'))
    case('multi-two-files-ok', {'a.yaml': doc(a), 'b.yaml': doc(b)})
    case('multi-uuid-duplicate', {'a.yaml': doc(a), 'b.yaml': doc(a)})
    case('multi-uuid-duplicate-case', {'a.yaml': doc(a), 'b.yaml': doc(a.replace(U1, U1.upper()))})
    case('multi-compute-node-duplicate', {'a.yaml': doc(cn), 'b.yaml': doc(cn)})
    case('multi-compute-node-uuid-and-name', {'a.yaml': doc(cn), 'b.yaml': doc(entry('name: $COMPUTE_NODE', inv('CUSTOM_D')))})
    case('multi-name-equals-uuid', {'a.yaml': doc(a), 'b.yaml': doc(entry(f'name: {U1}', inv('CUSTOM_D')))})
    case('multi-name-duplicate-in-file', {'a.yaml': doc(n1 + n1)})
    case('multi-noop-duplicate', {'a.yaml': doc(a), 'b.yaml': doc(f"  - identification:\n      uuid: {U1}\n")})
    case('multi-noop-then-real', {'a.yaml': doc(f"  - identification:\n      uuid: {U1}\n    traits:\n      additional: []\n"), 'b.yaml': doc(a)})
    case('multi-compute-node-and-explicit', {'a.yaml': doc(cn + n1 + a)})
    case('multi-second-file-invalid', {'a.yaml': doc(a), 'b.yaml': doc(entry('name: x', inv('VCPU')))})
    case('multi-first-file-invalid', {'a.yaml': doc(entry('name: x', inv('VCPU'))), 'b.yaml': doc(a)})
    case('multi-duplicate-then-invalid', {'a.yaml': doc(a + a), 'b.yaml': 'garbage: [\n'})
    case('multi-invalid-then-duplicate', {'a.yaml': 'garbage: [\n', 'b.yaml': doc(a + a)})
    case('multi-order-uppercase-first', {'b.yaml': doc(a), 'C.yaml': doc(b), 'a.yaml': doc(n1)})
    case('multi-order-digits', {'10.yaml': doc(a), '9.yaml': doc(b), '1.yaml': doc(n1)})
    case('multi-order-unicode', {'\u00e9.yaml': doc(a), 'z.yaml': doc(b), '\U0001F680.yaml': doc(n1), '\uff41.yaml': doc(cn)})
    case('multi-other-extensions-ignored', {'a.yaml': doc(a), 'b.yml': 'garbage: [\n', 'c.YAML': 'garbage: [\n', 'd.yaml.bak': 'x: [\n',
                                            'e.json': '{', 'yaml': 'x: [\n', 'f.yamlx': 'x: [\n', 'README': 'hello'})
    case('multi-hidden-file-ignored', {'a.yaml': doc(a), '.hidden.yaml': 'garbage: [\n'})
    case('multi-dot-yaml-name', {'a.yaml': doc(a), '.yaml': 'garbage: [\n'})
    case('multi-directory-named-yaml', {'a.yaml': doc(a), 'sub.yaml': None})
    case('multi-subdirectory-ignored', {'a.yaml': doc(a), 'sub/b.yaml': 'garbage: [\n'})
    case('multi-empty-directory', {})
    case('multi-only-other-files', {'a.yml': doc(a)})
    case('multi-space-in-name', {'my provider.yaml': doc(a)})
    case('multi-all-noop', {'a.yaml': doc("  - identification:\n      name: n1\n"), 'b.yaml': doc("  - identification:\n      name: n2\n    traits:\n      additional: []\n")})
    case('multi-unsupported-minor-and-ok', {'a.yaml': doc(a, version="'1.3'"), 'b.yaml': doc(b)})
    case('multi-empty-file-and-ok', {'a.yaml': doc(a), 'b.yaml': ''})
    case('multi-many-providers', {'a.yaml': doc(''.join(entry(f'name: host-{i}', inv(f'CUSTOM_R{i}', f'total: {i + 1}')) for i in range(60)))})
    case('multi-many-files', {f'f{i:02d}.yaml': doc(entry(f'name: host-{i}', traits=tr(f'CUSTOM_T{i}'))) for i in range(30)})


def syntax_cases():
    """YAML where PyYAML and other parsers part ways; most under an unknown key `x`."""
    body = entry(f'uuid: {U1}', inv())
    tail = {
        'dup-anchor': 'a: &x 1\nb: &x 2\n', 'alias-before-anchor': 'a: *x\nb: &x 1\n', 'recursive-list': 'x: &r [1, *r]\n',
        'recursive-map': 'x: &r {a: *r}\n', 'anchor-on-alias': 'a: &x 1\nb: &y *x\n', 'alias-key': 'a: &k key\n*k : 1\n',
        'alias-key-list': 'a: &k [1]\n? *k\n: 1\n', 'flow-seq-key': '[1, 2]: x\n', 'set-key': '? !!set {a}\n: 1\n',
        'binary-key': '? !!binary aGVsbG8=\n: 1\n', 'float-int-same-key': 'x: {1: a, 1.0: b, true: c}\n',
        'flow-unindented': 'x: [\n1, 2\n]\n', 'flow-map-unindented': 'x: {\na: 1\n}\n', 'flow-multiline-plain': 'x: [a\n  b, c]\n',
        'flow-tab': 'x: [a,\tb]\n', 'flow-map-missing-value': 'x: {a, b: 1}\n', 'flow-explicit-key': 'x: [? a : b]\n',
        'flow-json-colon': 'x: {"a":1}\n', 'flow-plain-colon': 'x: {a:1}\n', 'flow-url': 'x: [http://a.b/c]\n',
        'seq-of-seq': 'x:\n- - a\n  - b\n', 'seq-indented-map': 'x:\n-   a: 1\n    b: 2\n', 'dash-value': 'x: -\n',
        'question-value': 'x: ?\n', 'colon-value': 'x: :\n', 'dash-dash': 'x: --\n', 'key-spaces-before-colon': 'x   : 1\n',
        'empty-literal': 'x: |\ny: 1\n', 'empty-folded': 'x: >\ny: 1\n', 'literal-indent-indicator': 'x: |2\n    a\n   b\n',
        'literal-keep-blank': 'x: |+\n  a\n\n\ny: 1\n', 'folded-more-indented': 'x: >\n  a\n    b\n  c\n',
        'literal-bad-indent': 'x: |\n    a\n  b\n', 'literal-tab-indent': 'x: |\n\ta\n', 'single-quote-fold': "x: 'a\n  b'\n",
        'double-quote-escaped-break': 'x: "a\\\n  b"\n', 'double-quote-surrogate': 'x: "\\ud800"\n', 'double-quote-bad-hex': 'x: "\\x4"\n',
        'quoted-doubled': "x: 'it''s'\n", 'quoted-key-escape': '"\\x41": 1\n', 'plain-hash-inside': 'x: a #b\n',
        'doc-end-then-content': '...\nx: 1\n', 'doc-start-inline-flow': None, 'directive-late': 'x: 1\n%YAML 1.1\n',
        'str-tag-empty': 'x: !!str\n', 'null-tag-empty': 'x: !!null\n', 'int-tag-empty': 'x: !!int\n', 'bool-tag-YES': 'x: !!bool YES\n',
        'float-tag-inf-word': 'x: !!float inf\n', 'float-tag-exp': 'x: !!float 1e5\n', 'float-tag-hex': 'x: !!float 0x10\n',
        'int-tag-0o': 'x: !!int 0o17\n', 'int-tag-09': 'x: !!int 09\n', 'int-tag-space': 'x: !!int " 5"\n', 'int-tag-float': 'x: !!int 1.5\n',
        'int-0b-empty': 'x: 0b_\n', 'int-0x-empty': 'x: 0x_\n', 'timestamp-space': 'x: 2001-12-14 21:59:43.10 -5\n',
        'timestamp-bad-hour': 'x: 2001-12-14t25:00:00Z\n', 'timestamp-feb29': 'x: 1999-02-29\n', 'timestamp-leap': 'x: 2000-02-29\n',
        'timestamp-year0': 'x: 0000-01-01\n', 'timestamp-tag-bad': 'x: !!timestamp yesterday\n', 'timestamp-tz-99': 'x: 2001-12-14t21:59:43+99\n',
        'set-tag-seq': 'x: !!set [a]\n', 'omap-tag-map': 'x: !!omap {a: 1}\n', 'pairs-nested': 'x: !!pairs [[a, 1]]\n',
        'merge-explicit-tag': 'a: &b {k: 1}\nx: {!!merge <<: *b}\n', 'merge-quoted': "a: &b {k: 1}\nx: {'<<': *b}\n",
        'merge-in-seq': 'x: [<<]\n', 'merge-value': 'x: <<\n', 'merge-list-scalar': 'a: &b {k: 1}\nx: {<<: [*b, 1]}\n',
        'merge-nested': 'a: &a {k: 1}\nb: &b {<<: *a, j: 2}\nx: {<<: *b}\n', 'nonspecific-tag': 'x: ! 5\n', 'nonspecific-map': 'x: ! {a: 1}\n',
        'local-tag-map': 'x: !foo {a: 1}\n', 'tag-on-key': '!foo k: 1\n', 'named-handle': '%TAG !e! tag:yaml.org,2002:\n---\n',
        'bom-second': '\ufeffx: 1\n', 'nbsp-plain': 'x: a\xa0b\n', 'zero-width': 'x: a\u200bb\n',
        'deep-100': 'x: ' + '[' * 100 + ']' * 100 + '\n', 'deep-400': 'x: ' + '[' * 400 + ']' * 400 + '\n',
        # Past ~490 nested collections PyYAML's composer exceeds Python's recursion
        # limit; the exact depth depends on the caller's stack, so no case sits at the edge.
        'deep-470': 'x: ' + '[' * 470 + ']' * 470 + '\n', 'deep-485': 'x: ' + '[' * 485 + ']' * 485 + '\n',
        'deep-492': 'x: ' + '[' * 492 + ']' * 492 + '\n', 'deep-map-492': 'x: ' + '{a: ' * 492 + '1' + '}' * 492 + '\n',
        'deep-map-490': 'x: ' + '{a: ' * 490 + '1' + '}' * 490 + '\n', 'deep-map-491': 'x: ' + '{a: ' * 491 + '1' + '}' * 491 + '\n',
        'deep-block-489': ''.join('  ' * i + f'k{i}:\n' for i in range(489)) + '  ' * 489 + 'v\n',
        'deep-block-490': ''.join('  ' * i + f'k{i}:\n' for i in range(490)) + '  ' * 490 + 'v\n',
        'deep-block-491': ''.join('  ' * i + f'k{i}:\n' for i in range(491)) + '  ' * 491 + 'v\n',
        'deep-seq-490': ''.join('  ' * i + '-\n' for i in range(490)) + '  ' * 490 + 'v\n',
        'deep-seq-491': ''.join('  ' * i + '-\n' for i in range(491)) + '  ' * 491 + 'v\n',
        'quote-unindented-nested': 'z:\n  y: "a\nb"\n', 'flow-unindented-nested': 'z:\n  y: [a,\nb]\n',
        'flow-doc-marker': 'z: [\n---\n]\n', 'quote-doc-marker': 'z: "a\n---\nb"\n', 'quote-unindented-single': "z: 'a\nb'\n",
        'flow-quote-apostrophe': "z: [it's, b]\n", 'flow-unindented-comment': 'z: [a, # c\nb]\n',
        'deep-1000': 'x: ' + '[' * 1000 + ']' * 1000 + '\n', 'deep-5000': 'x: ' + '[' * 5000 + ']' * 5000 + '\n',
        'deep-block-300': ''.join('  ' * i + f'k{i}:\n' for i in range(300)),
        'many-keys': ''.join(f'k{i}: {i}\n' for i in range(3000)), 'long-value': 'x: ' + 'a' * 100000 + '\n',
        'pipe-in-flow': 'x: [|]\n', 'percent-in-middle': 'x: a%b\n', 'at-in-middle': 'x: a@b\n', 'comment-only-value': 'x: # c\n',
        'indented-comment': 'x: 1\n      # deep comment\ny: 2\n', 'multiline-key': '"a\n b": 1\n', 'key-no-space-colon': 'x:1\n',
    }
    for name, text in tail.items():
        if text is None:
            continue
        if name == 'named-handle':
            case(f'syn-{name}', {'a.yaml': text + doc(body) + 'x: !e!int 5\n'})
        elif name == 'bom-second':
            case(f'syn-{name}', {'a.yaml': doc(body) + text})
        elif name == 'directive-late' or name == 'doc-end-then-content':
            case(f'syn-{name}', {'a.yaml': doc(body) + text})
        else:
            case(f'syn-{name}', {'a.yaml': doc(body) + text})
    # Found by fuzzing against Nova.
    case('syn-two-document-ends', {'a.yaml': doc(body) + '...\n...\n'})
    case('syn-document-end-then-start', {'a.yaml': doc(body) + '...\n---\n'})
    case('syn-cr-in-flow', {'a.yaml': doc("  - identification: {\ruuid: $COMPUTE_NODE}\n    traits: {additional: [CUSTOM_A]}\n").encode()})
    case('syn-line-separator-in-flow-key', {'a.yaml': doc("  - identification: {uuid: $COMPUTE_NODE}\n    inventories: {additional: [{CUSTOM_A: {total\u2028: 4}}]}\n")})
    case('syn-anchor-colon-key', {'a.yaml': doc("  - identification:\n      name: n1\n    inventories:\n      &additional:\n        - CUSTOM_R1: {total: 1}\n")})
    case('syn-flow-question-inside', {'a.yaml': doc("  - identification: {name: n1}\n    inventories: {additional: [{CU?STOM_A: {total: 4}}]}\n")})
    case('syn-flow-question-value', {'a.yaml': doc('  - identification: {name: ?"gpu host"}\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-flow-question-key', {'a.yaml': "meta: {?schema_version: '1.0'}\nproviders:\n" + body})
    case('syn-flow-question-rc', {'a.yaml': doc("  - identification: {name: n1}\n    inventories: {additional: [{?CUSTOM_A: {total: 4}}]}\n")})
    case('syn-flow-question-seq', {'a.yaml': doc(body) + 'x: [?"q", ?b]\n'})
    case('syn-flow-key-next-line', {'a.yaml': doc(body) + 'x: {a\n : 1}\n'})
    case('syn-flow-key-two-lines', {'a.yaml': doc(body) + 'x: {a b\n c: 1}\n'})
    case('syn-flow-quoted-key-next-line', {'a.yaml': doc(body) + 'x: {"a"\n : 1}\n'})
    case('syn-flow-explicit-key-two-lines', {'a.yaml': doc(body) + 'x: {? a\n  b\n : 1}\n'})
    for name, prologue in {
        'unknown': '%FOO bar\n', 'bad-name': '%YAML}\n', 'yaml-bad-version': '%YAML 1.1x\n', 'yaml-comment': '%YAML 1.1 # c\n',
        'yaml-twice': '%YAML 1.1\n%YAML 1.1\n', 'tag-bad-handle': '%TAG !x tag:a\n', 'tag-ok': '%TAG ! tag:a,2000:\n', 'bare': '%\n',
    }.items():
        case(f'syn-directive-{name}', {'a.yaml': prologue + '---\n' + doc(body)})
    case('syn-explicit-key-value-indented', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders:\n  - ? identification\n      : name: n1\n    traits: {additional: [CUSTOM_A]}\n"})
    case('syn-explicit-key-value-aligned', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders:\n  - ? identification\n    : name: n1\n    traits: {additional: [CUSTOM_A]}\n"})
    case('syn-line-separator-in-quoted-name', {'a.yaml': doc('  - identification: {name: "gp\u2028u host"}\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-paragraph-separator-in-single-quoted', {'a.yaml': doc("  - identification: {name: 'a\u2029b'}\n    traits: {additional: [CUSTOM_A]}\n")})
    case('syn-flow-empty-key', {'a.yaml': doc(body) + 'x: {: b}\n'})
    case('syn-flow-leading-colon', {'a.yaml': doc(body) + 'x: [a, :b]\n'})
    case('syn-flow-leading-colon-key', {'a.yaml': doc("  - identification: {name: n1}\n    inventories: {:additional: [{CUSTOM_A: {total: 4}}]}\n")})
    case('syn-lone-anchor-after-end', {'a.yaml': doc(body) + '...\n&\n'})
    case('syn-lone-alias', {'a.yaml': doc(body) + 'x: [*]\n'})
    case('syn-line-separator-after-directive', {'a.yaml': '%YAML 1.1\u2028---\n' + doc(body)})
    case('syn-line-separator-spaces-in-quotes', {'a.yaml': doc('  - identification: {name: "gpu \u2028 host"}\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-bom-after-end', {'a.yaml': doc(body) + '...\n\ufeff\n'})
    case('syn-bom-before-start', {'a.yaml': '# c\n\ufeff---\n' + doc(body)})
    case('syn-bom-in-name', {'a.yaml': doc('  - identification: {name: "\ufeffgpu"}\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-flow-value-then-colon', {'a.yaml': doc("  - identification: {name: n1}\n    traits: {additional: ['CUSTOM_GPU']}:\n")})
    case('syn-flow-key-at-line-start', {'a.yaml': doc(body) + '[a, b]: 1\n'})
    case('syn-flow-colon-after-colon', {'a.yaml': doc('  - identification: {name: :"gpu host"}\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-directive-tab-in-name', {'a.yaml': '%YA\tML 1.1\n---\n' + doc(body)})
    case('syn-directive-tab-after-version', {'a.yaml': '%YAML 1.1\t# c\n---\n' + doc(body)})
    case('syn-colon-line-after-block-scalar', {'a.yaml': doc(body) + 'notes: |\n:  line one\n'})
    case('syn-colon-line-without-key', {'a.yaml': doc(body) + 'k\n: v\n'})
    case('syn-colon-line-in-block-scalar', {'a.yaml': doc(body) + 'notes: |\n  : text\n'})
    case('syn-explicit-key-seq', {'a.yaml': doc(body) + 'x:\n  - ? a\n    : b\n'})
    case('syn-tab-in-quoted-continuation', {'a.yaml': doc('  - identification: {name: "multi\n   \t   line name"}\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-tab-in-single-quoted-continuation', {'a.yaml': doc("  - identification:\n      name: 'multi\n\t line'\n    traits: {additional: [CUSTOM_A]}\n")})
    case('syn-tab-after-quoted-continuation', {'a.yaml': doc('  - identification: {name: "multi\n      line"}\t\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-block-scalar-at-key-column', {'a.yaml': doc(body) + 'notes:\n|\n  text\nz: 1\n'})
    case('syn-block-scalar-at-key-column-nested', {'a.yaml': doc(body) + 'a:\n  k:\n  >-\n    a\n    b\n  z: 1\n'})
    case('syn-block-scalar-at-key-column-seq', {'a.yaml': doc(body) + 'x:\n- k:\n  |\n   x\n'})
    case('syn-block-scalar-at-key-column-no-indent', {'a.yaml': doc(body) + 'k:\n|\ntext\n'})
    case('syn-block-scalar-name-at-key-column', {'a.yaml': doc('  - identification:\n      name:\n      |-\n        gpu-1\n    traits: {additional: [CUSTOM_A]}\n')})
    case('syn-quoted-at-key-column', {'a.yaml': doc(body) + 'k:\n"q"\n'})
    case('syn-doc-start-inline-flow', {'a.yaml': "--- {meta: {schema_version: '1.0'}, providers: []}\n"})
    case('syn-providers-flow-unindented', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders: [\n{identification: {name: n1}, traits: {additional: [CUSTOM_A]}}\n]\n"})
    case('syn-provider-merge', {'a.yaml': "base: &p\n  identification:\n    name: n0\n  traits:\n    additional: [CUSTOM_A]\nmeta:\n  schema_version: '1.0'\nproviders:\n  - <<: *p\n    identification:\n      name: n1\n  - *p\n"})
    case('syn-provider-alias-twice', {'a.yaml': "meta:\n  schema_version: '1.0'\nproviders:\n  - &p\n    identification: {name: n1}\n    traits: {additional: [CUSTOM_A]}\n  - *p\n"})
    case('syn-traits-recursive', {'a.yaml': doc(f"  - identification:\n      name: n1\n    traits:\n      additional: &t [CUSTOM_A, *t]\n")})
    case('syn-inventory-items-recursive', {'a.yaml': doc(f"  - identification:\n      name: n1\n    inventories:\n      additional: &t [*t]\n")})
    case('syn-version-merge', {'a.yaml': "v: &v {schema_version: '1.0'}\nmeta:\n  <<: *v\nproviders: []\n"})
    case('syn-version-key-int-and-str', {'a.yaml': "meta: {schema_version: '2.0', schema_version: '1.0'}\nproviders: []\n"})
    case('syn-identification-int-keys-equal', {'a.yaml': doc("  - identification: {name: n1, 1: a, 1.0: b}\n    traits: {additional: [CUSTOM_A]}\n")})
    case('syn-name-from-alias', {'a.yaml': "n: &n host-1\nmeta:\n  schema_version: '1.0'\nproviders:\n  - identification: {name: *n}\n    traits: {additional: [CUSTOM_A]}\n"})


def write(out):
    root = os.path.join(out)
    if os.path.exists(root):
        shutil.rmtree(root)
    os.makedirs(root)
    for name, files in cases.items():
        d = os.path.join(root, name)
        os.makedirs(d)
        for filename, content in files.items():
            path = os.path.join(d, filename)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if content is None:
                os.makedirs(path)
                continue
            data = content.encode('utf-8') if isinstance(content, str) else content
            with open(path, 'wb') as f:
                f.write(data)
        if not files or all(c is None for c in files.values()):
            # git keeps no empty directories
            open(os.path.join(d, '.keep'), 'w').close()
            for filename, content in files.items():
                if content is None:
                    open(os.path.join(d, filename, '.keep'), 'w').close()
        else:
            for filename, content in files.items():
                if content is None:
                    open(os.path.join(d, filename, '.keep'), 'w').close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('out')
    parser.add_argument('--nova-tests', default=next((p for p in DEFAULT_NOVA_TESTS if os.path.isdir(p)), None))
    args = parser.parse_args()
    if not args.nova_tests:
        sys.exit("Nova's unit tests not found (python3-nova): --nova-tests .../nova/tests/unit/compute")
    nova_unit_cases(args.nova_tests)
    version_cases()
    document_cases()
    identification_cases()
    inventory_cases()
    trait_cases()
    multi_file_cases()
    syntax_cases()
    write(args.out)
    print(f'{len(cases)} cases written to {args.out}')


if __name__ == '__main__':
    main()
