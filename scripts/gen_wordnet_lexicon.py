#!/usr/bin/env python3
"""Generates include/memhealth/text/wordnet_data.hpp, the WordNet-derived data of
include/memhealth/text/lexicon.hpp, from a WordNet 3.0 dict directory.

Usage: scripts/gen_wordnet_lexicon.py [dict-dir] [output]
  dict-dir  the WordNet database files (index.*, data.*, *.exc); default /usr/share/wordnet
            (Debian package wordnet-base)
  output    default include/memhealth/text/wordnet_data.hpp of the repository holding this script

Stdlib only; the output depends on the input files alone (everything is sorted).

What it keeps (lemmas of lowercase ASCII letters and '-'; a multiword lemma, WordNet's words
joined by '_', is written with single spaces: "musical instrument", "ice cream", "look down on"):
  words       every lemma of index.verb, index.adj, index.adv and every lemma of index.noun but
              names (a noun never tagged whose every sense is written capitalised in data.noun:
              Paris, Einstein, New York). A noun tagged in the semantic concordances
              (tagsense_cnt > 0) is a noun ("n"); one never tagged a minor noun ("m": "shrimp",
              "jazz", "bike"), known to the relations but not a lemma to lexicon.hpp's
              is_lemma() and lemma(), which the claim reader uses to tell names and common words
              apart ("Raj", "Rose", "Bob" are minor nouns too).
              Per word: its parts of speech and the synsets of its first 3 senses (sense order
              of index.*), a sense counting only when it is tagged (its rank < tagsense_cnt) or
              the first; for nouns also every later sense in the food lexicographer file
              (noun.food, lexnames(5WN): "crab" keeps its 5th sense, crabmeat, a shellfish), as
              what a person eats or cannot eat is what memory statements deny most. A synset
              keeps an id (0, 1, ...) when it is
              shared by two kept words (synonyms), or is a noun or verb synset with hypernyms, or
              is a root (no hypernyms) that the hypernym walk reaches; the others are dropped.
  hypernyms   for every noun and verb synset that the kept words reach (their kept senses) and for
              all its ancestors (closure upwards): its direct hypernyms ('@' and '@i' pointers).
              Ancestors get an id even when no kept word has them as a sense.
  exceptions  verb.exc, noun.exc, adj.exc, adv.exc: inflected form -> first base form listed
              (only those whose base form is a lemma of that part of speech; minor nouns are none).
  antonyms    direct antonyms ('!' pointers, always lexical: the source/target field names the words)
              of all four parts of speech; for adjectives also indirect ones: each word of a satellite
              synset (ss_type 's') is an antonym of the direct antonyms of its head synset's words
              (the head is the '&' target of the satellite). Each pair once, the smaller word first.

Format of the output, four arrays of string_views (pieces of at most 15000 bytes, split at
line ends) of tab-separated lines (each line ends with '\\n'):
  words:      P suffix TAB pos-letters (subset of "nmvar", in that order; "m": a minor noun)
              [TAB synset,synset,...]
              front-coded, sorted: P (one base-36 digit) is how many leading characters the word
              shares with the previous line's word, suffix the rest ("7ed" after "abandon" is
              "abandoned"); synset ids in base 36.
  exceptions: inflected TAB pos-letter TAB lemma; only entries whose lemma is in words and that
              the detachment rules (by_rules) would not find anyway
  antonyms:   word TAB direct,partners TAB indirect,partners (either list may be empty; each
              pair is listed once, under the word with more partners)
  hypernyms:  line i (0-based): synset i's hypernym synset ids, comma-separated, base 36; the
              synsets with hypernyms have the lowest ids, so the list ends at the first one without
"""
import pathlib
import re
import sys
import textwrap

POS_FILES = {"n": "noun", "v": "verb", "a": "adj", "r": "adv"}
POS_ORDER = "nvar"
LETTERS = "nmvar"  # the parts of speech of a word in the output; m: a noun never tagged
WORD = re.compile(r"^[a-z-]+(_[a-z-]+)*$")  # multiword lemmas: words joined by '_'
FOOD_LEXFILE = "13"  # noun.food (lexnames(5WN)): foods and drinks
ADJ_MARKER = re.compile(r"\((a|p|ip)\)$")
SENSES_KEPT = 3
PIECE_LIMIT = 15000  # bytes per raw literal piece (compilers' limit on one literal: 16 KB on MSVC)


def base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = digits[n % 36]
    while n >= 36:
        n //= 36
        out = digits[n % 36] + out
    return out


def good(word: str) -> bool:
    return bool(WORD.match(word)) and all(any(c.isalpha() for c in part) for part in word.split("_"))


def text(word: str) -> str:
    """A lemma as the output spells it: the words of a multiword lemma joined by one space."""
    return word.replace("_", " ")


def body_lines(path: pathlib.Path):
    """Lines of a WordNet index/data file without the licence header (lines that begin with spaces)."""
    with open(path, encoding="latin-1") as f:
        for line in f:
            if line.startswith("  ") or not line.strip():
                continue
            yield line.rstrip("\n")


def read_index(d: pathlib.Path, pos: str):
    """index.pos: lemma pos synset_cnt p_cnt [ptr_symbol]*p_cnt sense_cnt tagsense_cnt offset*synset_cnt."""
    out = {}
    for line in body_lines(d / f"index.{POS_FILES[pos]}"):
        f = line.split()
        lemma, synset_cnt, p_cnt = f[0], int(f[2]), int(f[3])
        tagsense_cnt = int(f[5 + p_cnt])
        offsets = f[6 + p_cnt:6 + p_cnt + synset_cnt]
        assert len(offsets) == synset_cnt, line
        out[lemma] = (tagsense_cnt, offsets)
    return out


def read_data(d: pathlib.Path, pos: str, extra=None):
    """data.pos: offset lex_filenum ss_type w_cnt(hex) [word lex_id]*w_cnt p_cnt [ptr]*p_cnt ... | gloss
    ptr: symbol offset pos source/target(4 hex). Returns offset -> (ss_type, words, pointers);
    also fills `extra` (when given) with offset -> (lex_filenum, words as written, case kept)."""
    out = {}
    for line in body_lines(d / f"data.{POS_FILES[pos]}"):
        f = line.split(" | ", 1)[0].split()
        offset, ss_type, w_cnt = f[0], f[2], int(f[3], 16)
        words, written = [], []
        for i in range(w_cnt):
            w = ADJ_MARKER.sub("", f[4 + 2 * i])  # adjective position markers: big(a)
            written.append(w)
            words.append(w.lower())
        if extra is not None:
            extra[offset] = (f[1], written)
        k = 4 + 2 * w_cnt
        p_cnt = int(f[k])
        ptrs = []
        for i in range(p_cnt):
            sym, toff, tpos, st = f[k + 1 + 4 * i:k + 5 + 4 * i]
            tpos = "a" if tpos == "s" else tpos
            ptrs.append((sym, toff, tpos, int(st[:2], 16), int(st[2:], 16)))
        out[offset] = (ss_type, words, ptrs)
    return out


def read_exc(d: pathlib.Path, pos: str):
    out = {}
    with open(d / f"{POS_FILES[pos]}.exc", encoding="latin-1") as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or not good(parts[0]):
                continue
            lemma = next((p for p in parts[1:] if good(p)), None)
            if lemma is not None and lemma != parts[0]:
                out.setdefault(parts[0], lemma)
    return out


# morphy's detachment rules (morphy(7WN)), in its order: suffix -> ending.
RULES = {
    "n": [("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}


def by_rules(word: str, pos: str, pos_of: dict) -> str:
    """What text/lexicon.hpp's lemma() gives without the exception list: the result of the first
    rule that is a lemma, else the word itself (must match the C++ code)."""
    if pos == "n" and (word.endswith("ss") or len(word) <= 2):
        return word
    for suffix, ending in RULES[pos]:
        if word.endswith(suffix) and len(word) > len(suffix):
            base = word[:len(word) - len(suffix)] + ending
            if pos in pos_of.get(base, ()):
                return base
    return word


def literal(name: str, doc: str, text: str) -> str:
    pieces, cur, size = [], [], 0
    for line in text.splitlines(keepends=True):
        if size + len(line) > PIECE_LIMIT and cur:
            pieces.append("".join(cur))
            cur, size = [], 0
        cur.append(line)
        size += len(line)
    if cur or not pieces:
        pieces.append("".join(cur))
    # One char array per piece (a literal over 64 KB is beyond what compilers must support:
    # clang -Wpedantic warns), sized by the compiler, then an array of views of them: a
    # string_view built from a literal alone would run a constexpr strlen over it.
    out = []
    for i, p in enumerate(pieces):
        assert ')wn"' not in p
        out.append(f'inline constexpr char {name}_{i}[] = R"wn({p})wn";')
    out += [f"/// {doc}; in {len(pieces)} pieces split at line ends.",
            f"inline constexpr std::string_view {name}[] = {{"]
    out += [f"    {{{name}_{i}, sizeof {name}_{i} - 1}}," for i in range(len(pieces))]
    out.append("};")
    return "\n".join(out) + "\n"


def licence_text(d: pathlib.Path) -> list:
    lines = []
    with open(d / "index.verb", encoding="latin-1") as f:
        for line in f:
            if not line.startswith("  "):
                break
            lines.append(re.sub(r"^\s*\d+ ?", "", line.rstrip()).rstrip())
    return lines


def main() -> int:
    d = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet")
    repo = pathlib.Path(__file__).resolve().parent.parent
    out_path = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else \
        repo / "include" / "memhealth" / "text" / "wordnet_data.hpp"
    missing = [n for p in POS_ORDER for n in (f"index.{POS_FILES[p]}", f"data.{POS_FILES[p]}",
                                              f"{POS_FILES[p]}.exc") if not (d / n).is_file()]
    if missing:
        print(f"gen_wordnet_lexicon: {d} lacks {', '.join(missing)} (apt-get install wordnet-base)",
              file=sys.stderr)
        return 2
    if not any("WordNet 3.0 Copyright" in line for line in licence_text(d)):
        print(f"gen_wordnet_lexicon: {d}/index.verb is not WordNet 3.0 (its licence header names "
              "another version); the header would say 3.0", file=sys.stderr)
        return 2
    index = {p: read_index(d, p) for p in POS_ORDER}
    noun_extra = {}  # noun synset offset -> (lex_filenum, words as written)
    data = {p: read_data(d, p, noun_extra if p == "n" else None) for p in POS_ORDER}

    def proper(lemma: str, offsets) -> bool:
        """Every sense of the noun is written capitalised (a name: Paris, Einstein, New York)."""
        return all(any(w.lower() == lemma and w != lemma for w in noun_extra[o][1]) for o in offsets)

    # Antonyms.
    direct = set()
    for pos in POS_ORDER:
        for off, (_, words, ptrs) in data[pos].items():
            for sym, toff, tpos, src, dst in ptrs:
                if sym != "!":
                    continue
                a = words[src - 1] if src else None
                b = data[tpos][toff][1][dst - 1] if dst else None
                if a and b and good(a) and good(b) and a != b:
                    direct.add(tuple(sorted((a, b))))
    indirect = set()
    for off, (ss_type, words, ptrs) in data["a"].items():
        if ss_type != "s":
            continue
        heads = [toff for sym, toff, tpos, _, _ in ptrs if sym == "&" and tpos == "a"]
        for h in heads:
            h_type, h_words, h_ptrs = data["a"][h]
            if h_type != "a":
                continue
            for sym, toff, tpos, src, dst in h_ptrs:
                if sym != "!" or not dst:
                    continue
                x = data[tpos][toff][1][dst - 1]
                for s in words:
                    if good(s) and good(x) and s != x:
                        pair = tuple(sorted((s, x)))
                        if pair not in direct:
                            indirect.add(pair)

    # Words and their kept synsets.
    pos_of = {}
    synsets_of = {}
    for pos in POS_ORDER:
        for lemma, (tagsense_cnt, offsets) in index[pos].items():
            if not good(lemma):
                continue
            if pos == "n" and tagsense_cnt == 0 and proper(lemma, offsets):
                continue
            # a noun never tagged is a minor noun, "m": known to the relations, not to is_lemma()
            pos_of.setdefault(lemma, set()).add("m" if pos == "n" and tagsense_cnt == 0 else pos)
            first = max(1, min(SENSES_KEPT, tagsense_cnt))
            kept = offsets[:first]
            if pos == "n" and tagsense_cnt == 0 and len(offsets) > 1:
                kept = []  # an ambiguous minor noun: no frequency says which sense is meant
            if pos == "n":  # and every food or drink sense ("crab": the crabmeat, its 5th)
                kept = kept + [o for o in offsets[len(kept):] if noun_extra[o][0] == FOOD_LEXFILE]
            synsets_of.setdefault(lemma, []).extend(f"{pos}{o}" for o in kept)
    members = {}
    for w, ids in synsets_of.items():
        for s in ids:
            members.setdefault(s, set()).add(w)
    shared = {s for s, m in members.items() if len(m) > 1}

    # Hypernyms ('@' and '@i' pointers) of the noun and verb synsets the kept words reach, and
    # of all their ancestors (closure upwards, so that a lookup can walk to the roots).
    def hypernyms_of(s):
        return sorted({f"{tpos}{toff}" for sym, toff, tpos, _, _ in data[s[0]][s[1:]][2]
                       if sym in ("@", "@i")})
    hyper = {}
    todo = sorted(s for s in members if s[0] in "nv")
    ancestors = set()
    while todo:
        s = todo.pop()
        if s in hyper:
            continue
        hyper[s] = hypernyms_of(s)
        for h in hyper[s]:
            ancestors.add(h)
            if h not in hyper:
                todo.append(h)
    # Ids: first the synsets with hypernyms (line i of the hypernym list is synset i's), then
    # the other synsets that matter: shared ones (synonyms) and roots reached from below.
    with_hyper = sorted(s for s, hs in hyper.items() if hs)
    others = sorted((shared | {s for s in ancestors if not hyper[s]}) - set(with_hyper))
    number = {s: i for i, s in enumerate(with_hyper + others)}

    word_lines = []
    counts = {p: 0 for p in LETTERS}
    synonym_entries = 0
    prev = ""
    for w in sorted(pos_of, key=text):
        letters = "".join(p for p in LETTERS if p in pos_of[w])
        for p in letters:
            counts[p] += 1
        ids = sorted({number[s] for s in synsets_of.get(w, []) if s in number})
        t = text(w)
        shared_prefix = 0
        while shared_prefix < min(len(t), len(prev), 35) and t[shared_prefix] == prev[shared_prefix]:
            shared_prefix += 1
        line = f"{base36(shared_prefix)}{t[shared_prefix:]}\t{letters}"
        prev = t
        if ids:
            synonym_entries += 1
            line += "\t" + ",".join(base36(i) for i in ids)
        word_lines.append(line + "\n")

    hyper_lines = [",".join(sorted(base36(number[h]) for h in hyper[s])) + "\n"
                   for s in with_hyper]

    # Exceptions whose lemma is kept, less those the detachment rules already get right.
    exc_lines = []
    for pos in POS_ORDER:
        for infl, lemma in sorted(read_exc(d, pos).items()):
            if pos in pos_of.get(lemma, ()) and by_rules(infl, pos, pos_of) != lemma:
                exc_lines.append(f"{text(infl)}\t{pos}\t{text(lemma)}\n")

    # Antonym pairs grouped under the word with more partners (ties: the smaller word).
    degree = {}
    for pair in direct | indirect:
        for w in pair:
            degree[w] = degree.get(w, 0) + 1
    groups = {}
    for kind, pairs in (("d", direct), ("i", indirect)):
        for a, b in pairs:
            key, other = (a, b) if (degree[a], b) >= (degree[b], a) else (b, a)
            groups.setdefault(key, {"d": [], "i": []})[kind].append(other)
    ant_lines = [f"{text(k)}\t{','.join(sorted(map(text, g['d'])))}\t"
                 f"{','.join(sorted(map(text, g['i'])))}\n" for k, g in sorted(groups.items())]

    lic = "\n".join(("/// " + l).rstrip() for l in licence_text(d))
    multiword = sum(1 for w in pos_of if "_" in w)
    stats = (f"{len(word_lines)} words ({multiword} of several words; nouns {counts['n']} tagged + "
             f"{counts['m']} never tagged, verbs {counts['v']}, adjectives {counts['a']}, "
             f"adverbs {counts['r']}), {synonym_entries} with synset ids ({len(number)} synsets, "
             f"{len(shared)} shared, {len(with_hyper)} with hypernyms), "
             f"{len(exc_lines)} exceptions, {len(direct)} direct + {len(indirect)} indirect antonym pairs")
    contents = "\n".join("/// " + l for l in textwrap.wrap(f"Contents: {stats}.", 96))
    header = f"""#pragma once
/// @file wordnet_data.hpp
/// GENERATED by scripts/gen_wordnet_lexicon.py from the WordNet 3.0 database files (Princeton,
/// Debian package wordnet-base). DO NOT EDIT: rerun the script instead. The data is parsed by
/// text/lexicon.hpp (english_lexicon::builtin()); the format is described in the script.
{contents}
///
/// This data is derived from WordNet 3.0, whose licence follows (also in scripts/WORDNET_LICENSE):
///
{lic}

// clang-format off
#include <string_view>

namespace memhealth::detail::wordnet {{

/// Source database version.
inline constexpr std::string_view version = "WordNet 3.0";

"""
    body = (literal("words", "word TAB pos-letters (of \"nmvar\") [TAB shared synset ids, comma-separated]",
                    "".join(word_lines)) + "\n" +
            literal("exceptions", "inflected TAB pos-letter TAB lemma (morphy exception lists)",
                    "".join(exc_lines)) + "\n" +
            literal("antonyms", "word TAB word TAB d (direct) | i (indirect, adjective satellites)",
                    "".join(ant_lines)) + "\n" +
            literal("hypernyms", "line i: the hypernym synset ids of synset i (comma-separated)",
                    "".join(hyper_lines)) + "\n" +
            "}  // namespace memhealth::detail::wordnet\n// clang-format on\n")
    out_path.write_text(header + body, encoding="ascii")
    print(f"gen_wordnet_lexicon: wrote {out_path} ({out_path.stat().st_size // 1024} KB): {stats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
