#pragma once
/// @file hygiene.hpp
/// Detector "hygiene": junk stored as if it were a memory (SPEC section 5: prompt-template
/// fragments, placeholders, content without any letter).
///
/// Patterns come in two lists, both user-extendable, both matched case-insensitively on
/// normalised text (Unicode NFKC + case folding, so full-width "ＴＯＤＯ" matches "todo"):
/// - `contains_patterns` match anywhere in the content. They are compared against the content
///   normalised with punctuation **kept** (`text_normalizer{.fold_punctuation = false}`), because
///   template fragments such as "{{", "<|im_start|>" or "[INST]" are punctuation.
/// - `exact_patterns` match the whole content, compared with punctuation and whitespace folded
///   (`ctx.normalized_texts()` against the pattern passed through `ctx.normalizer()`), so
///   "n/a", "N/A." and " n / a " all match the pattern "N/A".
///   Placeholders are only junk when they are the whole memory: "TODO" is junk, "TODO: buy
///   milk" is a to-do item.
/// - `prefix_patterns` match at the start of the content (normalised as `contains_patterns`, then
///   leading whitespace skipped): the openers of a model's reply stored as if it were a fact
///   ("Sure! Here's ...", "以下是...", "好的，我来..."). They are only junk at the start: "the
///   list below is what she wants" or "以下是" inside a sentence is ordinary text.
/// The built-in model boilerplate covers English, Chinese, Japanese, Spanish and German: the
/// "as an AI language model" disclaimers (作为一个AI语言模型, 作为人工智能, AIアシスタントとして,
/// como modelo de lenguaje, als KI-Sprachmodell), refusals that only a model writes (我无法提供 /
/// 我无法访问 / 很抱歉，我不能 ...; not a bare 我无法, which is how a user says "I cannot eat
/// spicy food": 我无法吃辣) and system-prompt fragments (You are a helpful assistant,
/// 你是一个乐于助人的助手, あなたは役に立つアシスタントです, eres un asistente útil, du bist ein
/// hilfreicher Assistent).
/// A content without any letter (no code point of a Unicode L* category; Chinese characters are
/// letters, utf8proc) is junk too ("12345", "!!!", "{{}}"). Empty and whitespace-only content is
/// left to the structural detector (`content_empty`).

#include <utf8proc.h>

#include <string>
#include <string_view>
#include <vector>

#include "memhealth/detect/finding.hpp"
#include "memhealth/record/traits.hpp"
#include "memhealth/text/normalize.hpp"

namespace memhealth {

namespace detail {
/// 1 when s has a letter, 0 when it has only non-letters, -1 when it has nothing but
/// whitespace / control / format code points. Invalid UTF-8 bytes count as letters (not junk).
inline int hygiene_letter_class(std::string_view s) noexcept {
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(s.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(s.size());
  int result = -1;
  while (left > 0) {
    utf8proc_int32_t cp = -1;
    const auto len = utf8proc_iterate(p, left, &cp);
    if (len <= 0) return 1;
    const auto cat = utf8proc_category(cp);
    if (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) return 1;
    const bool blank = cat == UTF8PROC_CATEGORY_ZS || cat == UTF8PROC_CATEGORY_ZL ||
                       cat == UTF8PROC_CATEGORY_ZP || cat == UTF8PROC_CATEGORY_CC ||
                       cat == UTF8PROC_CATEGORY_CF;
    if (!blank) result = 0;
    p += len;
    left -= len;
  }
  return result;
}
}  // namespace detail

/// Detector "hygiene": emits `junk_content` (severity warning, repair "manual_review") with
/// record_ids {id} and one evidence entry `pattern` per matched pattern (the pattern as
/// configured, or "no_letters"), then `match` ("contains", "prefix", "exact" or "no_letters") of
/// the first match. One finding per record at most.
///
/// Needs only `basic_record` (id, content). Incremental runs check changed records only.
/// @complexity O(total content length x number of contains patterns); allocates one normalised
/// string per checked record.
struct hygiene_detector {
  static constexpr std::string_view name = "hygiene";

  /// Substrings that mark prompt-template fragments and model boilerplate.
  std::vector<std::string> contains_patterns = {
      "{{", "}}", "<|im_start|>", "<|im_end|>", "<|system|>", "<|user|>", "<|assistant|>", "[INST]",
      "[/INST]", "<<SYS>>", "### Instruction", "### Response", "You are a helpful assistant",
      "As an AI language model", "as a large language model", "as an AI assistant",
      "my knowledge cutoff", "lorem ipsum",
      // Chinese
      "作为一个AI语言模型", "作为AI语言模型", "作为一个人工智能", "作为人工智能",
      "作为一个语言模型", "作为一个AI助手", "作为AI助手", "我是一个AI语言模型", "我无法提供",
      "我无法访问", "我无法回答", "我无法浏览", "我无法协助", "很抱歉，我不能", "很抱歉，我无法",
      "抱歉，我无法", "你是一个乐于助人的助手", "你是一个有帮助的助手", "你是一个AI助手",
      "你是一个智能助手",
      // Japanese
      "AIアシスタントとして", "AI言語モデルとして", "あなたは役に立つアシスタントです",
      // Spanish
      "como modelo de lenguaje", "como un modelo de lenguaje", "como asistente de IA",
      "eres un asistente útil",
      // German
      "als KI-Sprachmodell", "als Sprachmodell", "als KI-Assistent",
      "du bist ein hilfreicher Assistent"};
  /// Openers of a model's reply, matched at the start of the content only.
  std::vector<std::string> prefix_patterns = {
      "Sure! Here",      "Sure, here",   "Certainly! Here", "Certainly, here",
      "Of course! Here", "以下是",       "以下为",          "好的，我来",
      "好的，以下是",    "当然！以下是", "当然，以下是",    "当然可以！以下是"};
  /// Whole-content placeholders.
  std::vector<std::string> exact_patterns = {"TODO",        "TBD",       "N/A", "null", "none",
                                             "nil",         "undefined", "NaN", "test", "test test",
                                             "placeholder", "example",   "asdf"};
  /// Report content without any letter.
  bool flag_no_letters = true;

  /// Appends junk_content findings; never mutates the store.
  template <class Ctx>
  void run(Ctx& ctx, std::vector<finding>& out) const {
    using R = typename Ctx::record_type;
    MEMHEALTH_REQUIRE_CAPABILITY(basic_record, R, "hygiene_detector", "id, content");
    const text_normalizer keep_punct{{}, false};
    std::vector<std::string> contains;
    contains.reserve(contains_patterns.size());
    for (const auto& p : contains_patterns) contains.push_back(keep_punct(p));
    std::vector<std::string> prefixes;
    prefixes.reserve(prefix_patterns.size());
    for (const auto& p : prefix_patterns) prefixes.push_back(keep_punct(p));
    std::vector<std::string> exact;
    exact.reserve(exact_patterns.size());
    for (const auto& p : exact_patterns) exact.push_back(std::string(ctx.normalizer()(p)));

    const auto& store = ctx.store();
    const std::size_t n = store.size();
    const auto* folded = exact.empty() ? nullptr : &ctx.normalized_texts();
    for (std::size_t i = 0; i < n; ++i) {
      if (!ctx.is_changed(i)) continue;
      const R& r = store.record(i);
      const std::string_view content = field::content(r);
      const int letters = detail::hygiene_letter_class(content);
      if (letters < 0) continue;  // empty / blank: content_empty is structural's
      finding f;
      std::string_view first_match;
      auto hit = [&](const std::string& pattern, std::string_view how) {
        f.with("pattern", pattern);
        if (first_match.empty()) first_match = how;
      };
      if (!contains.empty() || !prefixes.empty()) {
        const std::string text = keep_punct(content);
        for (std::size_t k = 0; k < contains.size(); ++k)
          if (!contains[k].empty() && text.find(contains[k]) != std::string::npos)
            hit(contains_patterns[k], "contains");
        const auto start = text.find_first_not_of(" \t\r\n");
        const std::string_view head =
            start == std::string::npos ? std::string_view{} : std::string_view(text).substr(start);
        for (std::size_t k = 0; k < prefixes.size(); ++k)
          if (!prefixes[k].empty() && head.starts_with(prefixes[k]))
            hit(prefix_patterns[k], "prefix");
      }
      if (folded)
        for (std::size_t k = 0; k < exact.size(); ++k)
          if (!exact[k].empty() && (*folded)[i] == exact[k]) hit(exact_patterns[k], "exact");
      if (flag_no_letters && letters == 0) hit("no_letters", "no_letters");
      if (first_match.empty()) continue;
      f.with("match", std::string(first_match));
      f.kind = std::string(finding_kinds::junk_content);
      f.severity = severity::warning;
      f.detector = std::string(name);
      f.record_ids = {std::string(field::id(r))};
      f.suggested_repair = "manual_review";
      out.push_back(std::move(f));
    }
  }
};

}  // namespace memhealth
