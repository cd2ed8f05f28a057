#pragma once
/// @file claims_chinese.hpp
/// The Chinese reader of the claim extractor (claims.hpp): the holder, comparisons between two
/// options, single-valued attributes, then the longest cue at each position (claim_words.hpp),
/// characters as terms, rates, spans and numerals.
/// Internal (namespace detail::claims); use `default_claim_extractor`.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memhealth/text/claim.hpp"
#include "memhealth/text/claim_implications.hpp"
#include "memhealth/text/claim_lexicon.hpp"
#include "memhealth/text/claim_measures.hpp"

namespace memhealth::detail::claims {

namespace cw = claim_words;

// ------------------------------------------------------------------ Chinese

// One name for a relative called in several ways (老婆 / 妻子 / 太太, 老公 / 丈夫, 母亲 /
// 妈妈 / 老妈, 父亲 / 爸爸 / 老爸).
constexpr sv chinese_relative_name(sv r) noexcept {
  if (r == "老婆" || r == "太太" || r == "媳妇") return "妻子";
  if (r == "老公") return "丈夫";
  if (r == "母亲" || r == "老妈" || r == "妈") return "妈妈";
  if (r == "父亲" || r == "老爸" || r == "爸") return "爸爸";
  return r;
}

// The length in bytes of a surname and a title at the start of `s` ("王阿姨", "张老师",
// "刘经理", "陈总"), or 0.
inline std::size_t chinese_titled_name(sv s) noexcept {
  if (s.size() < 9 || !is_cjk_at(s, 0) || cw::chinese_surnames.find(s.substr(0, 3)) == sv::npos)
    return 0;
  for (sv title : {sv("阿姨"), sv("叔叔"), sv("老师"), sv("经理"), sv("医生"), sv("师傅"),
                   sv("先生"), sv("女士"), sv("小姐"), sv("奶奶"), sv("爷爷"), sv("总")})
    if (s.substr(3).starts_with(title) && s.size() > 3 + title.size()) return 3 + title.size();
  return 0;
}

// The value of a Chinese digit character (零 .. 九, 两 2, 十 10), or -1.
inline double chinese_digit(sv ch) noexcept {
  constexpr sv digits[] = {"零", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "两"};
  for (std::size_t d = 0; d < std::size(digits); ++d)
    if (ch == digits[d]) return d == 11 ? 2 : static_cast<double>(d);
  return -1;
}

// Classifiers and measure words right after a count ("一包烟", "五只猫", "两瓶酒"): no term.
inline constexpr sv chinese_classifiers[] = {"个", "名", "只", "包", "根", "杯", "瓶", "碗", "辆",
                                             "套", "条", "双", "位", "块", "片", "口", "顿", "本",
                                             "次", "支", "盒", "张", "台", "部", "间"};

// Whether a Chinese clause opens as a statement without a subject does: with a cue word of one
// to four characters that is no relative and no function word ("喜欢", "不", "每天", "以前"), or
// with an attribute cue ("住在", "老家").
inline bool chinese_subjectless(const claim_lexicon& lex, sv s) {
  for (std::size_t l = 3; l <= 12 && l <= s.size(); l += 3) {
    const std::uint32_t bits = lex.zh(s.substr(0, l));
    if (bits != 0 && !(bits & (cw::relative | cw::stop))) return true;
  }
  return std::any_of(cw::chinese_attributes.begin(), cw::chinese_attributes.end(),
                     [&](const cw::chinese_attribute_cue& a) { return s.starts_with(a.cue); });
}

// Reads one Chinese clause (no clause punctuation inside).
inline void read_chinese_clause(const claim_lexicon& lex, sv s, const std::string& inherited,
                                std::vector<text_claim>& out, std::string& first_holder) {
  text_claim c;
  std::size_t i = 0;
  const text_filter present(s);  // skips the searches for cues the clause cannot hold
  auto starts = [&](std::size_t at, sv p) { return s.substr(at).starts_with(p); };
  // ---- a scene before the holder ("出差时用户更愿意坐飞机"): the rest, in that scene
  if (inherited.empty() || out.empty()) {
    for (sv end : {sv("的时候"), sv("时候"), sv("时")})
      for (sv who : {sv("用户"), sv("我")}) {
        const std::string mark = std::string(end) + std::string(who);
        const std::size_t p = find_text(s, mark);
        if (p == sv::npos || p == 0 || p > 18) continue;
        const std::size_t from = out.size();
        read_chinese_clause(lex, s.substr(p + end.size()), inherited, out, first_holder);
        for (std::size_t k = from; k < out.size(); ++k) {
          for (std::size_t q = 0; q < p;) {
            const std::size_t l = utf8_len(static_cast<unsigned char>(s[q]));
            out[k].scene.push_back(std::string(s.substr(q, l)));
            q += l;
          }
          sort_unique(out[k].scene);
        }
        return;
      }
  }
  // ---- holder
  std::string base;
  if (starts(0, "用户")) {
    base = "self";
    i = sv("用户").size();
  } else if (starts(0, "我们") || starts(0, "我")) {
    base = "self";
    i = starts(0, "我们") ? sv("我们").size() : sv("我").size();
  } else if (starts(0, "他") || starts(0, "她")) {
    base = "3p:" + std::string(s.substr(0, 3));
    i = 3;
  } else if (s.size() >= 9 && (starts(0, "小") || starts(0, "老") || starts(0, "阿")) &&
             is_cjk_at(s, 3)) {
    base = "name:" + std::string(s.substr(0, 6));
    i = 6;
  } else if (const std::size_t titled = chinese_titled_name(s); titled > 0) {
    base = "name:" + std::string(s.substr(0, titled));  // "王阿姨", "刘经理", "张总"
    i = titled;
  } else if (s.size() >= 12 && is_cjk_at(s, 0) &&
             cw::chinese_surnames.find(s.substr(0, 3)) != sv::npos && is_cjk_at(s, 3)) {
    // surname + one or two characters, then a cue word or a verb-like character
    std::size_t len = 6;
    if (is_cjk_at(s, 6) && lex.zh(s.substr(6, 3)) == 0 && lex.zh(s.substr(3, 6)) == 0 &&
        !(lex.zh(s.substr(6, 6)) != 0))
      len = 9;
    // only when what follows is a cue (喜欢, 不, 是, 在, 住, 每 ...), else it is no name
    const sv rest = s.substr(len);
    bool cue_follows = false;
    for (std::size_t l = 3; l <= 9 && l <= rest.size(); l += 3)
      if (lex.zh(rest.substr(0, l)) != 0) cue_follows = true;
    if (cue_follows) {
      base = "name:" + std::string(s.substr(0, len));
      i = len;
    }
  }
  if (!base.empty()) {
    std::size_t k = i;
    if (starts(k, "的")) k += 3;
    for (std::size_t l = 9; l >= 6; l -= 3)
      // ("用户的老板是王总": an attribute; "用户的爸爸是个路痴": a description, the relative's)
      // ("我女儿是A型血", "用户的妈妈是属龙的": a value that names its own attribute, a blood
      // group or a zodiac sign, is the relative's too)
      if (const sv after = s.substr(std::min(k + l, s.size()));
          k + l <= s.size() && (lex.zh(s.substr(k, l)) & cw::relative) &&
          (!after.starts_with("是") || after.starts_with("是个") || after.starts_with("是一个") ||
           after.starts_with("是一名") || after.starts_with("是一位") ||
           after.starts_with("是位") || after.starts_with("是属") ||
           (after.ends_with("型血") && after.size() <= 3 + 2 + 6))) {
        c.holder = (base == "self" ? "" : base + "/") +
                   "rel:" + std::string(chinese_relative_name(s.substr(k, l)));
        i = k + l;
        break;
      }
    if (c.holder.empty()) c.holder = base;
    // "小陈的老婆叫李娜", "我叫小王": 叫 right after the holder, then a name that ends the
    // clause (a surname, or 小/老/阿, first: not "叫外卖", which orders food)
    if (starts(i, "叫") && !starts(i, "叫做") && s.size() - i - 3 >= 6 && s.size() - i - 3 <= 9 &&
        (cw::chinese_surnames.find(s.substr(i + 3, 3)) != sv::npos || starts(i + 3, "小") ||
         starts(i + 3, "老") || starts(i + 3, "阿"))) {
      c.attribute = "name";
      c.kind = predicate_class::state;
      for (std::size_t q = i + 3; q < s.size();) {
        const std::size_t l = utf8_len(static_cast<unsigned char>(s[q]));
        c.value.push_back(std::string(s.substr(q, l)));
        q += l;
      }
      sort_unique(c.value);
      c.terms = c.value;
      out.push_back(std::move(c));
      return;
    }
  }
  // a statement without a subject, as memory extractors write them ("喜欢狗", "不吃猪肉",
  // "每天喝咖啡", "住在北京"): about the user, when it opens with a cue word (not a relative,
  // who holds what follows: "妈妈喜欢狗") or an attribute cue
  if (base.empty() && c.holder.empty() && inherited.empty() && out.empty() &&
      chinese_subjectless(lex, s))
    c.holder = "self";
  if (c.holder.empty()) c.holder = inherited;
  if (first_holder.empty()) first_holder = c.holder;
  // ---- a past state right after the holder ("用户以前住在上海", "原来在银行上班"): it held and
  // holds no longer, read as English "used to" is: denied now, a change. Not an experience
  // (曾经去过日本: 过 after the marker) nor a span (过去三年, 之前两周).
  for (const sv past : {sv("以前"), sv("原来"), sv("过去"), sv("曾经"), sv("之前"), sv("从前")}) {
    if (!starts(i, past)) continue;
    const std::size_t after = i + past.size();
    // (nor a past report: 之前说, 以前提到)
    bool report = false;
    for (const sv said : {sv("说"), sv("提到"), sv("表示"), sv("告诉"), sv("讲"), sv("聊")})
      report = report || starts(after, said);
    if (after < s.size() && !report && find_text(s, "过", after) == sv::npos &&
        chinese_digit(s.substr(after, 3)) < 0 && !starts(after, "几")) {
      c.polarity = -c.polarity;
      c.change = true;
      i = after;
    }
    break;
  }

  // ---- a purpose says nothing of the claim ("为了减肥已经不喝奶茶了", "为了减肥把奶茶戒了"): 为了
  // up to the negation, change marker, adverb or 把 that starts the predicate
  if (const std::size_t p = present.may_contain("为了") ? find_text(s, "为了", i) : sv::npos;
      p != sv::npos) {
    std::size_t e = sv::npos;
    for (sv m : {sv("已经"), sv("不"), sv("没"), sv("就"), sv("才"), sv("每"), sv("开始"),
                 sv("决定"), sv("专门"), sv("特意"), sv("把")})
      if (const std::size_t at = find_text(s, m, p + 6); at != sv::npos && at < e) e = at;
    if (e != sv::npos) {
      const std::string rest = std::string(s.substr(0, p)) + std::string(s.substr(e));
      read_chinese_clause(lex, rest, inherited, out, first_holder);
      return;
    }
  }
  // ---- "嫌X太吵", "嫌X又酸又难喝": what 嫌 finds fault with is X; the fault after 太, 又, 很,
  // 那么 or 这么 is the reason, no part of the claim (not 嫌弃, which takes its object whole)
  if (const std::size_t p = present.may_contain("嫌") ? find_text(s, "嫌", i) : sv::npos;
      p != sv::npos && !s.substr(p + 3).starts_with("弃")) {
    std::size_t e = sv::npos;
    for (sv m : {sv("太"), sv("又"), sv("很"), sv("那么"), sv("这么")})
      if (const std::size_t at = find_text(s, m, p + 6); at != sv::npos && at < e) e = at;
    if (e != sv::npos) {
      read_chinese_clause(lex, s.substr(0, e), inherited, out, first_holder);
      return;
    }
  }
  // ---- 既 X 也/又 Y: two clauses, each with its own negation ("既不抽烟也不喝酒")
  if (const std::size_t both = find_text(s, "既", i); both != sv::npos) {
    std::size_t also = sv::npos;
    for (sv m : {sv("也"), sv("又")})
      if (const std::size_t at = find_text(s, m, both + 3); at != sv::npos && at < also) also = at;
    if (also != sv::npos) {
      const std::string head =
          std::string(s.substr(0, both)) + std::string(s.substr(both + 3, also - both - 3));
      read_chinese_clause(lex, head, inherited, out, first_holder);
      const std::string holder = out.empty() ? inherited : out.back().holder;
      read_chinese_clause(lex, s.substr(also + 3), holder, out, first_holder);
      return;
    }
  }
  // ---- "足球其次", "咸的次之", "绿茶排在后面": X comes second, the rejected option of the
  // liking before it ("更喜欢篮球，足球其次"); so does X of a clause "其次才是X" / "其次是X"
  // ("首选山里，其次才是海边")
  for (const sv second : {sv("其次"), sv("次之"), sv("排在后面"), sv("才是"), sv("是")}) {
    std::size_t before = out.size();
    if (second == "才是" || second == "是") {
      if (!starts(i, "其次") || !starts(i + 6, second) || s.size() < i + 6 + second.size() + 3)
        continue;
      read_chinese_clause(lex, s.substr(i + 6 + second.size()), inherited, out, first_holder);
    } else {
      if (!s.ends_with(second) || s.size() < i + second.size() + 3) continue;
      read_chinese_clause(lex, s.substr(0, s.size() - second.size()), inherited, out, first_holder);
    }
    if (out.size() == before) return;
    auto& r = out.back();
    r.polarity = -r.polarity;
    r.order = -1;
    r.predicate = "like";
    r.kind = predicate_class::preference;
    r.terms.push_back("like");
    sort_unique(r.terms);
    if (before > 0 && out[before - 1].polarity > 0 && out[before - 1].predicate == "like" &&
        out[before - 1].order == 0)
      out[before - 1].order = 1;
    return;
  }
  // ---- a preference between two options: "X胜过Y", "宁愿X也不Y", "X而不是Y"; a clause
  // "比起X" names the rejected option of the next one
  if (starts(i, "比起") || starts(i, "相比")) {
    const std::size_t from = i + 6;
    // the rejected option's claim: the opposite of a liking
    const auto reject_last = [&out] {
      auto& r = out.back();
      r.polarity = -r.polarity;
      r.order = -1;
      r.terms.push_back("like");
      r.predicate = "like";
      r.kind = predicate_class::preference;
      sort_unique(r.terms);
    };
    // "比起米饭更爱吃面条": the option before 更 is the rejected one, the rest the preferred
    if (const std::size_t g = find_text(s, "更", from);
        g != sv::npos && g > from && g - from <= 18) {
      const std::size_t preferred = out.size();
      read_chinese_clause(lex, s.substr(g), c.holder, out, first_holder);
      if (out.size() > preferred) out.back().order = 1;
      const std::string holder = out.empty() ? c.holder : out.back().holder;
      const std::size_t before = out.size();
      read_chinese_clause(lex, s.substr(from, g - from), holder, out, first_holder);
      if (out.size() > before) reject_last();
      return;
    }
    // (a clause of 比起 alone, "比起米饭，用户更喜欢面条": the next clause is the preferred
    // option and names the holder; order -2 waits for it, default_claim_extractor pairs them)
    const std::size_t before = out.size();
    read_chinese_clause(lex, s.substr(from), c.holder, out, first_holder);
    if (out.size() > before) {
      reject_last();
      out.back().order = -2;
    }
    return;
  }
  for (sv marker : {sv("胜过"), sv("而不是"), sv("也不"), sv("而非"), sv("多过"), sv("多于")}) {
    const std::size_t m = present.may_contain(marker) ? find_text(s, marker, i) : sv::npos;
    if (m == sv::npos || m == i) continue;
    const std::string head(s.substr(0, m));
    std::string tail(s.substr(m + marker.size()));
    // Rule: "不X也不Y" ("不喜欢茶也不喜欢咖啡") denies both, as 既不X也不Y does: a head that is
    // itself denied states no order of preference; each side is read as its own denial
    if (marker == "也不" &&
        (find_text(head, "不", i) != sv::npos || find_text(head, "没", i) != sv::npos)) {
      read_chinese_clause(lex, head, inherited, out, first_holder);
      const std::string holder = out.empty() ? inherited : out.back().holder;
      read_chinese_clause(lex, "不" + tail, holder, out, first_holder);
      return;
    }
    // "宁可X也不愿Y": the modal after 也不 is part of the negation cut off with it
    if (marker == "也不")
      for (sv modal : {sv("愿意"), sv("愿"), sv("想"), sv("肯"), sv("要")})
        if (sv(tail).substr(0, modal.size()) == modal) {
          tail.erase(0, modal.size());
          break;
        }
    // "X多过Y" states the order itself; 更 before the verb ("更看重X而不是Y") marks one too
    // (not 更换, 更新, 更改, 更正: a change); 多于 "more than" only after a verb of liking or
    // choosing ("偏爱绿茶多于红茶"; not "存款多于负债", two amounts)
    bool prefers = marker == "多过";
    for (std::size_t g = find_text(head, "更", i); g != sv::npos && !prefers;
         g = find_text(head, "更", g + 3)) {
      const sv after = sv(head).substr(g + 3, 3);
      prefers = !after.empty() && after != "换" && after != "新" && after != "改" && after != "正";
    }
    for (std::size_t q = 0; q + 3 <= head.size(); q += 3)
      for (std::size_t l = 3; l <= 9 && q + l <= head.size(); l += 3)
        if (lex.zh(head.substr(q, l)) & (cw::att_positive | cw::prefer)) prefers = true;
    if (!prefers) continue;
    const std::size_t head_at = out.size();
    read_chinese_clause(lex, head, inherited, out, first_holder);
    // (an order of preference; 也不 of 宁可X也不Y too)
    if (out.size() > head_at) out.back().order = 1;
    if (out.size() > head_at && out.back().predicate.empty()) {
      auto& h = out.back();  // "更看重拍照": the preferred option, a like
      h.terms.push_back("like");
      h.predicate = "like";
      h.kind = predicate_class::preference;
      sort_unique(h.terms);
    }
    const std::string holder = out.empty() ? inherited : out.back().holder;
    const std::size_t before = out.size();
    read_chinese_clause(lex, tail, holder, out, first_holder);
    if (out.size() > before) {
      auto& r = out.back();
      r.polarity = -r.polarity;  // the rejected option (也不's negation was cut off with it)
      r.order = -1;
      r.terms.push_back("like");
      r.predicate = "like";
      r.kind = predicate_class::preference;
      sort_unique(r.terms);
    }
    return;
  }
  // 把X放在Y前面 / 之前 ("把家庭放在事业前面"): X comes before Y, a preference; 后面 / 之后 the
  // other way. Two claims, like X and not like Y, so that the swapped order conflicts.
  if (const std::size_t ba = present.may_contain("放在") ? find_text(s, "把", i) : sv::npos;
      ba != sv::npos) {
    const std::size_t put = find_text(s, "放在", ba + 3);
    std::size_t end = sv::npos;
    bool before = true;
    for (sv m : {sv("前面"), sv("之前"), sv("前头"), sv("后面"), sv("之后")})
      if (const std::size_t at = put == sv::npos ? sv::npos : find_text(s, m, put + 6);
          at != sv::npos && at + m.size() == s.size() && at > put + 6) {
        end = at;
        before = m == "前面" || m == "之前" || m == "前头";
      }
    if (put != sv::npos && end != sv::npos && put > ba + 3) {
      const sv xs = s.substr(ba + 3, put - ba - 3), ys = s.substr(put + 6, end - put - 6);
      for (int side = 0; side < 2; ++side) {
        text_claim k;
        k.holder = c.holder;
        k.kind = predicate_class::preference;
        k.predicate = "like";
        k.polarity = (side == 0) == before ? 1 : -1;
        k.order = k.polarity;
        const sv w = side == 0 ? xs : ys;
        for (std::size_t q = 0; q < w.size();) {
          const std::size_t l = utf8_len(static_cast<unsigned char>(w[q]));
          k.terms.emplace_back(w.substr(q, l));
          q += l;
        }
        k.terms.emplace_back("like");
        sort_unique(k.terms);
        out.push_back(std::move(k));
      }
      return;
    }
  }
  // X比Y<adj> ("觉得猫比狗可爱"): X has the quality, Y less so; two claims, the second denied,
  // so that "狗比猫可爱" conflicts. X and Y are taken to be of one length (1 to 4 characters).
  if (const std::size_t bi = present.may_contain("比") ? find_text(s, "比", i) : sv::npos;
      bi != sv::npos && bi > i) {
    std::size_t from = i;
    for (sv lead : {sv("觉得"), sv("认为"), sv("感觉")})
      if (starts(from, lead)) from += lead.size();
    const std::size_t xl = bi - from;
    if (xl >= 3 && xl <= 12 && bi + 3 + xl + 3 <= s.size() &&
        find_text(s, "比", bi + 3) == sv::npos && find_text(s, "不", i) == sv::npos) {
      const sv xs = s.substr(from, xl), ys = s.substr(bi + 3, xl), adj = s.substr(bi + 3 + xl);
      auto chars = [](sv w, std::vector<std::string>& v) {
        for (std::size_t q = 0; q < w.size();) {
          const std::size_t l = utf8_len(static_cast<unsigned char>(w[q]));
          v.emplace_back(w.substr(q, l));
          q += l;
        }
      };
      for (int side = 0; side < 2; ++side) {
        text_claim k;
        k.holder = c.holder;
        k.kind = predicate_class::state;
        k.polarity = side == 0 ? 1 : -1;
        k.order = k.polarity;  // (an order: "狗可爱" agrees with it, "狗比猫可爱" does not)
        chars(side == 0 ? xs : ys, k.object);
        k.terms = k.object;
        chars(adj, k.terms);
        sort_unique(k.terms);
        sort_unique(k.object);
        out.push_back(std::move(k));
      }
      return;
    }
  }
  // 最喜欢的X是Y / 最爱(吃)的X是Y: the favourite X
  for (sv fav : {sv("最喜欢"), sv("最爱")}) {
    const std::size_t f = present.may_contain(fav) ? find_text(s, fav, i) : sv::npos;
    if (f == sv::npos) continue;
    const std::size_t de = find_text(s, "的", f);
    const std::size_t shi = de == sv::npos ? sv::npos : find_text(s, "是", de);
    if (shi == sv::npos) continue;
    c.attribute = "favourite " + std::string(s.substr(de + 3, shi - de - 3));
    c.kind = predicate_class::preference;
    const sv v = s.substr(shi + 3);
    for (std::size_t q = 0; q < v.size();) {
      const std::size_t l = utf8_len(static_cast<unsigned char>(v[q]));
      c.value.push_back(std::string(v.substr(q, l)));
      q += l;
    }
    sort_unique(c.value);
    c.terms = c.value;
    out.push_back(std::move(c));
    return;
  }
  // ---- attributes
  // the first cue in the clause names the attribute ("搬回老家": a move, whose value is 老家)
  const cw::chinese_attribute_cue* first = nullptr;
  std::size_t first_at = sv::npos;
  // (属 of a zodiac sign, not of 直属 "direct", 下属 "subordinate", 家属 "family", 所属 ...)
  auto zodiac_word = [&](std::size_t p) {
    if (p < 3) return false;
    const sv before = s.substr(p - 3, 3);
    return before == "直" || before == "下" || before == "家" || before == "所" || before == "归" ||
           before == "隶" || before == "附" || before == "亲" || before == "专" || before == "金";
  };
  // (调到 of a transfer, not of setting a thing: 把闹钟调到六点)
  auto set_thing = [&](std::size_t p) { return find_text(s, "把", i) < p; };
  for (const auto& a : cw::chinese_attributes)
    if (std::size_t p = present.may_contain(a.cue) ? find_text(s, a.cue, i) : sv::npos;
        (a.cue == "属" && p != sv::npos && zodiac_word(p) &&
         (p = find_text(s, a.cue, p + 3)) == sv::npos) ||
        (a.cue == "调到" && p != sv::npos && set_thing(p) && (p = sv::npos) == sv::npos) ||
        (p != sv::npos && (p < first_at || (p == first_at && a.cue.size() > first->cue.size())))) {
      if (p == sv::npos) continue;
      first = &a;
      first_at = p;
    }
  for (const auto* ap = first; ap != nullptr; ap = nullptr) {
    const auto& a = *ap;
    const std::size_t p = first_at;
    c.attribute = std::string(a.attribute);
    c.change = c.change || a.change;
    c.kind = predicate_class::state;
    // the value: what follows the cue (or, for 已婚/单身, the cue itself)
    std::string v;
    if (a.attribute == "birthday")
      if (const auto md = chinese_month_day(s.substr(p + a.cue.size()))) {
        c.value.push_back(*md);  // "五月二十号" -> "05-20"
        break;
      }
    if (a.attribute == "marital_status") {
      v = std::string(cw::chinese_marital_value(a.cue));
    } else {
      std::size_t q = p + a.cue.size();
      if (s.substr(q).starts_with("是") || s.substr(q).starts_with("在")) q += 3;
      v = std::string(s.substr(q));
      if (a.cue == "型血") v = std::string(s.substr(i, p - i));
      if (a.cue == "土生土长的" && v.ends_with("人")) v.resize(v.size() - 3);  // 广东人: 广东
    }
    for (std::size_t q = 0; q < v.size();) {
      std::size_t l = utf8_len(static_cast<unsigned char>(v[q]));
      if (static_cast<unsigned char>(v[q]) < 0x80) {  // "AB" of "AB型血" is one value
        while (q + l < v.size() && std::isalnum(static_cast<unsigned char>(v[q + l]))) ++l;
        std::string word = v.substr(q, l);
        for (auto& x : word) x = static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
        c.value.push_back(std::move(word));
        q += l;
        continue;
      }
      const std::string ch = v.substr(q, l);
      if (!(lex.zh(ch) & (cw::stop | cw::aux)) && ch != "了") c.value.push_back(ch);
      q += l;
    }
    break;
  }
  // 在 X 工作 / 上班 / 任职: employer X; 在 X 读书 / 上学: school X
  if (c.attribute.empty())
    for (const auto& [work, place] : cw::chinese_place_verbs) {
      if (!present.may_contain(work)) continue;
      const std::size_t w = find_text(s, work, i);
      const std::size_t at = find_text(s, "在", i);
      // (做 "works as" only at a firm counted by 家: 在一家外企做销售, not 在家做饭)
      if (work == "做" && (at == sv::npos || !starts(at + 3, "一家"))) continue;
      if (w != sv::npos && at != sv::npos && at < w) {
        c.attribute = std::string(place);
        c.kind = predicate_class::state;
        const sv v = s.substr(at + 3, w - at - 3);
        for (std::size_t q = 0; q < v.size();) {
          const std::size_t l = utf8_len(static_cast<unsigned char>(v[q]));
          c.value.push_back(std::string(v.substr(q, l)));
          q += l;
        }
        break;
      }
    }
  const std::size_t body_at = i;  // where the clause's predicate starts
  // 用户的 X 是 Y (X one to four characters, no cue): the holder's X is Y ("用户的车是特斯拉")
  if (c.attribute.empty() && !base.empty() && starts(i, "的")) {
    const std::size_t k = i + 3;
    const std::size_t m = find_text(s, "是", k);
    if (m != sv::npos && m > k && m - k <= 12 && m + 3 < s.size()) {
      bool plain = true;
      for (std::size_t q = k; q < m; q += 3)
        if (!is_cjk_at(s, q) || lex.zh(s.substr(q, 3)) != 0) plain = false;
      if (plain) {
        c.attribute = std::string(s.substr(k, m - k));
        c.kind = predicate_class::state;
        const sv v = s.substr(m + 3);
        for (std::size_t q = 0; q < v.size();) {
          std::size_t l = utf8_len(static_cast<unsigned char>(v[q]));
          // a number in Chinese numerals is the number in digits ("五千元" / "5000元": one
          // value; "两万" 20000, "两千五" 2500)
          if (static_cast<unsigned char>(v[q]) >= 0x80 && chinese_digit(v.substr(q, l)) >= 0) {
            if (const auto [n, used] = chinese_number_at(v, q); n >= 0 && used > 0) {
              char buf[32];
              std::snprintf(buf, sizeof buf, "%.15g", n);
              c.value.emplace_back(buf);
              q += used;
              continue;
            }
          }
          if (static_cast<unsigned char>(v[q]) < 0x80) {
            while (q + l < v.size() && std::isalnum(static_cast<unsigned char>(v[q + l]))) ++l;
          }
          const std::string piece(v.substr(q, std::min(l, v.size() - q)));
          if (!(lex.zh(piece) & (cw::stop | cw::aux)) && piece != "了") c.value.push_back(piece);
          q += l;
        }
        sort_unique(c.value);
        c.terms = c.value;
        out.push_back(std::move(c));
        return;
      }
    }
  }
  // 是 X 人 (X of two to four characters, no cue): where the holder comes from ("是北京人",
  // "是湖南长沙人"), the attribute 老家 names ("老家在山东" / "是四川人": two hometowns); not a
  // kind of person counted by a numeral or classifier ("是个好人", "是一名老人")
  if (c.attribute.empty() && starts(i, "是") && s.ends_with("人") && s.size() >= i + 12 &&
      s.size() <= i + 18 && !starts(i + 3, "一") && !starts(i + 3, "个") && !starts(i + 3, "名") &&
      !starts(i + 3, "位")) {
    const sv v = s.substr(i + 3, s.size() - i - 6);
    bool plain = true;
    for (std::size_t q = 0; q + 3 <= v.size(); q += 3)
      if (lex.zh(v.substr(q, 3)) != 0 || !is_cjk_at(v, q)) plain = false;
    if (plain) {
      c.attribute = "hometown";
      c.kind = predicate_class::state;
      for (std::size_t q = 0; q + 3 <= v.size(); q += 3)
        c.value.push_back(std::string(v.substr(q, 3)));
    }
  }
  // 是 X 的员工 / 职员 / 雇员 (X of one to six characters, no cue): X is the holder's employer, as
  // "在 X 上班" says ("是腾讯的员工")
  if (c.attribute.empty() && starts(i, "是") &&
      (s.ends_with("的员工") || s.ends_with("的职员") || s.ends_with("的雇员")) &&
      s.size() >= i + 15 && s.size() <= i + 30) {
    const sv v = s.substr(i + 3, s.size() - i - 12);
    bool plain = true;
    for (std::size_t q = 0; q + 3 <= v.size(); q += 3)
      if (lex.zh(v.substr(q, 3)) != 0 || !is_cjk_at(v, q)) plain = false;
    if (plain && v.size() % 3 == 0) {
      c.attribute = "employer";
      c.kind = predicate_class::state;
      for (std::size_t q = 0; q + 3 <= v.size(); q += 3)
        c.value.push_back(std::string(v.substr(q, 3)));
      sort_unique(c.value);
    }
  }
  // 向 X 汇报 (X of one to five characters): the holder's manager ("直接向刘经理汇报工作")
  if (c.attribute.empty() && present.may_contain("汇报")) {
    const std::size_t to = find_text(s, "向", i);
    const std::size_t rep = to == sv::npos ? sv::npos : find_text(s, "汇报", to + 3);
    // (what is reported is the work, or nothing; the one reported to is no relative: "向父母
    // 汇报" is no manager)
    auto relative_in = [&](std::size_t from, std::size_t end) {
      for (std::size_t q = from; q < end; q += 3)
        for (std::size_t l = 3; l <= 9 && q + l <= end; l += 3)
          if (lex.zh(s.substr(q, l)) & cw::relative) return true;
      return false;
    };
    const sv after = rep == sv::npos ? sv() : s.substr(rep + 6);
    if (rep != sv::npos && rep > to + 3 && rep - to - 3 <= 15 &&
        (after.empty() || after == "工作" || after == "工作了" || after == "了") &&
        !relative_in(to + 3, rep) && find_text(s.substr(i, to - i), "不") == sv::npos &&
        find_text(s.substr(i, to - i), "没") == sv::npos) {
      c.attribute = "manager";
      c.kind = predicate_class::state;
      for (std::size_t q = to + 3; q + 3 <= rep; q += 3) c.value.emplace_back(s.substr(q, 3));
      sort_unique(c.value);
      c.terms = c.value;
      out.push_back(std::move(c));
      return;
    }
  }
  // N岁: age
  std::vector<std::string> terms, scene, time;
  bool in_scene = false;
  while (i < s.size()) {
    // longest cue at i
    std::uint32_t cue = 0;
    std::size_t len = 0;
    for (std::size_t l = std::min(lex.max_zh_bytes(), s.size() - i); l >= 3; --l) {
      if (const std::uint32_t x = lex.zh(s.substr(i, l)); x != 0) {
        cue = x;
        len = l;
        break;
      }
    }
    if (len == 0) {
      len = utf8_len(static_cast<unsigned char>(s[i]));
      if (i + len > s.size()) len = s.size() - i;
      const sv ch = s.substr(i, len);
      // A degree adverb right before an attitude cue says how strong the attitude is, not what
      // it is toward: "最烦下雨天" is "烦下雨天", "超爱火锅" "爱火锅" (最, 超, 挺, 蛮, 好, 真,
      // 太 before 喜欢, 讨厌, 怕 ...; 很, 非常, 特别 are stop words anyway). Only before an
      // attitude: 最近, 好吃, 太辣 keep their characters.
      if (ch == "最" || ch == "超" || ch == "挺" || ch == "蛮" || ch == "好" || ch == "真" ||
          ch == "太") {
        std::uint32_t next = 0;
        for (std::size_t l = std::min(lex.max_zh_bytes(), s.size() - i - len); l >= 3; --l)
          if (const std::uint32_t x = lex.zh(s.substr(i + len, l)); x != 0) {
            next = x;
            break;
          }
        if (next & (claim_words::att_positive | claim_words::att_negative | claim_words::aversion |
                    claim_words::tolerate)) {
          i += len;
          continue;
        }
      }
      // ASCII words and numbers
      if (static_cast<unsigned char>(s[i]) < 0x80) {
        std::size_t k = i;
        while (k < s.size() && static_cast<unsigned char>(s[k]) < 0x80 &&
               std::isalnum(static_cast<unsigned char>(s[k])))
          ++k;
        if (k == i) {
          ++i;
          continue;
        }
        std::string word(s.substr(i, k - i));
        for (auto& x : word) x = static_cast<char>(std::tolower(static_cast<unsigned char>(x)));
        i = k;
        if (all_digits(word)) {
          if (s.substr(i).starts_with("月") || s.substr(i).starts_with("日") ||
              s.substr(i).starts_with("号") || s.substr(i).starts_with("点") ||
              s.substr(i).starts_with("年"))
            time.push_back(word + std::string(s.substr(i, 3)));
          else
            c.quantities.push_back(std::atof(word.c_str()));
          if (s.substr(i).starts_with("岁") && c.attribute.empty()) {
            c.attribute = "age";
            c.kind = predicate_class::state;
            c.value.push_back(word);
          }
          continue;
        }
        (in_scene ? scene : terms).push_back(word);
        continue;
      }
      // Chinese numerals, a run of them read as one number ("三十五" 35, "一万" 10000, "八千"
      // 8000; "两三千" about 3000, the larger of a range)
      double v = chinese_digit(ch);
      std::size_t run = len;  // bytes of the numeral's characters
      if (v >= 0) {
        double total = 0, section = ch == "十" ? 10 : 0, num = ch == "十" ? 0 : v;
        for (std::size_t q = i + len; q + 3 <= s.size(); q += 3) {
          const sv n = s.substr(q, 3);
          const double d = chinese_digit(n);
          if (d >= 0) {
            if (n == "十") {
              section += (num > 0 ? num : 1) * 10;
              num = 0;
            } else {
              num = d;
            }
          } else if (n == "百" || n == "千") {
            section += (num > 0 ? num : 1) * (n == "百" ? 100 : 1000);
            num = 0;
          } else if (n == "万") {
            total += (section + num > 0 ? section + num : 1) * 10000;
            section = num = 0;
          } else {
            break;
          }
          run = q + 3 - i;
        }
        v = total + section + num;
      }
      if (v >= 0 && ch == "一" && s.substr(i + len).starts_with("点点")) {
        i += len + 6;  // "一点点微辣": a little, no time and no count
        continue;
      }
      if (v >= 0 && ch == "一" && s.substr(i + len).starts_with("点") &&
          (find_text(s, "都", i) != sv::npos || find_text(s, "也不", i) != sv::npos ||
           find_text(s, "也没", i) != sv::npos)) {
        i += len + 3;  // "一点辣都不吃": not at all, no time and no count
        continue;
      }
      if (v >= 0) {
        const std::string numeral(s.substr(i, run));
        i += run;
        // an age: "二十八岁", and "今年三十五了" (this year's number, nothing counted)
        const bool this_year =
            std::find(time.begin(), time.end(), "今年") != time.end() &&
            (i == s.size() || s.substr(i) == "了" || s.substr(i).starts_with("了，"));
        if ((s.substr(i).starts_with("岁") || this_year) && c.attribute.empty() && v < 150 &&
            v == std::floor(v)) {
          c.attribute = "age";
          c.kind = predicate_class::state;
          c.value.push_back(std::to_string(static_cast<int>(v)));
          if (this_year) std::erase(time, "今年");
        }
        if (s.substr(i).starts_with("月") || s.substr(i).starts_with("点")) {
          time.push_back(numeral);
          continue;
        }
        // a span that divides a rate ("一个月一次", "一周三次"): no quantity of its own
        std::size_t u = i;
        if (s.substr(u).starts_with("个")) u += 3;
        bool span = false;
        for (sv unit : {sv("星期"), sv("周"), sv("月"), sv("年"), sv("天"), sv("晚")})
          if (s.substr(u).starts_with(unit) && !s.substr(u).starts_with("天天")) {
            i = u + unit.size();
            span = true;
            break;
          }
        if (span) continue;
        c.quantities.push_back(v);
        // the classifier after a count is no term ("一包烟", "五只猫")
        for (const sv unit : chinese_classifiers)
          if (s.substr(i).starts_with(unit)) {
            i += unit.size();
            break;
          }
        continue;
      }
      if (ch == "几") {  // "几根烟", "几次": a few, no number (not "几句", a degree)
        bool counted = false;
        for (const sv unit : chinese_classifiers)
          if (s.substr(i + len).starts_with(unit)) {
            i += len + unit.size();
            counted = true;
            break;
          }
        if (counted) continue;
      }
      if (ch == "点" && i >= 3 && (s.substr(i - 3, 3) == "喝" || s.substr(i - 3, 3) == "吃")) {
        i += len;  // "喝点酒": drinks a little
        continue;
      }
      if (ch == "岁" || ch == "次" || ch == "个" || ch == "只" || ch == "杯" || ch == "勺" ||
          ch == "根" || ch == "本") {
        i += len;
        continue;
      }
      if (ch == "改" && i + 6 <= s.size() && is_cjk_at(s, i + 3) &&
          lex.zh(s.substr(i + 3, 3)) == 0) {
        c.change = c.replaces = true;  // "改喝茶": now drinks tea instead
        i += len;
        continue;
      }
      (in_scene ? scene : terms).push_back(std::string(ch));
      i += len;
      continue;
    }
    const sv word = s.substr(i, len);
    i += len;
    if (cue & cw::negator) {
      // General rule: 不到 / 不足 before a number ("走不到两千步", "不足5小时") is "fewer than",
      // a bound on the amount, not a denial of the clause: the amount is read as the bound
      // (compared per rate like any amount: "每天走一万步" / "一天走不到两千步" differ)
      if (word == "不" && (s.substr(i).starts_with("到") || s.substr(i).starts_with("足")) &&
          i + 3 < s.size() &&
          (chinese_digit(s.substr(i + 3, std::min<std::size_t>(3, s.size() - i - 3))) >= 0 ||
           std::isdigit(static_cast<unsigned char>(s[i + 3])))) {
        i += 3;
        continue;
      }
      c.polarity = -c.polarity;
      if (cue & cw::frequency) c.frequency = 0;
      if (cue & cw::change) c.change = true;
      continue;
    }
    if (cue & cw::frequency) {
      c.frequency = cw::chinese_frequency_of(word);
      continue;
    }
    if (cue & cw::scene) {
      // 时 / 的时候 end a scene that began at the clause's start; 在家, 出差 are scenes themselves
      if (word == "时" || word == "的时候" || word == "时候") {
        for (auto& x : terms) scene.push_back(std::move(x));
        terms.clear();
      } else {
        for (std::size_t q = 0; q < word.size();) {
          const std::size_t l = utf8_len(static_cast<unsigned char>(word[q]));
          scene.push_back(std::string(word.substr(q, l)));
          q += l;
        }
      }
      continue;
    }
    if (cue & cw::time) {
      time.push_back(std::string(word));
      if (cue & cw::event) c.event = true;
      continue;
    }
    if (cue & cw::restrictive) c.restrictive = true;
    if (cue & cw::att_positive) {
      terms.push_back("like");
      c.predicate = "like";
      c.kind = predicate_class::preference;
      // (更喜欢, 偏爱, 宁可: the preferred option of an order, the other one unsaid)
      if ((cue & cw::prefer) && c.polarity > 0 && c.order == 0) c.order = 1;
      continue;
    }
    if (cue & cw::att_negative) {
      terms.push_back("like");
      c.predicate = "like";
      c.polarity = -c.polarity;
      c.kind = predicate_class::preference;
      continue;
    }
    if (cue & cw::aversion) {
      c.any_predicate = true;
      c.polarity = -c.polarity;
      c.kind = predicate_class::preference;
      continue;
    }
    if (cue & cw::terminate) {
      c.any_predicate = true;
      c.polarity = -c.polarity;
      c.change = true;
      c.kind = predicate_class::state;
      // "送给了朋友", "卖给了邻居": the one who received it is no part of what was given
      if (word.ends_with("给")) break;
      continue;
    }
    if (cue & cw::change) {
      c.change = true;
      if (word == "换成" || word == "改成" || word == "改为" || word == "换了") c.replaces = true;
      continue;
    }
    if (cue & cw::additive) {
      c.additive = true;
      continue;
    }
    if (cue & cw::event) {
      c.event = true;
      // 吃了 / 喝了: the verb is a term
      terms.push_back(std::string(word.substr(0, 3)));
      continue;
    }
    if (cue & (cw::stop | cw::aux | cw::relative)) {
      if (cue & cw::relative) terms.push_back(std::string(word));
      continue;
    }
    // restrictive words and the rest: per character
    for (std::size_t q = 0; q < word.size();) {
      const std::size_t l = utf8_len(static_cast<unsigned char>(word[q]));
      terms.push_back(std::string(word.substr(q, l)));
      q += l;
    }
  }
  // a rate: a span (每天, 每周, 一个月 ...) and a count (三次, 两回); the span alone is once per
  // span
  {
    double days = -1;
    constexpr std::pair<sv, double> spans[] = {
        {"每天", 1},   {"每日", 1},   {"每晚", 1},     {"一天", 1},  {"每周", 7},    {"每星期", 7},
        {"一周", 7},   {"一星期", 7}, {"每个星期", 7}, {"每月", 30}, {"每个月", 30}, {"一个月", 30},
        {"每年", 365}, {"一年", 365}, {"每个周末", 7}, {"每周末", 7}};
    for (const auto& [span, d] : spans)
      if (present.may_contain(span) && find_text(s, span) != sv::npos) {
        days = d;
        // (a span that is no cue word left its characters among the terms: "每月房租" /
        // "每年房租" are one thing over two periods)
        if (span == "每月" || span == "每个月" || span == "每年" || span == "每星期" ||
            span == "每个星期")
          for (std::size_t q = 0; q < span.size(); q += 3)
            if (const auto at = std::find(terms.begin(), terms.end(), span.substr(q, 3));
                at != terms.end())
              terms.erase(at);
        break;
      }
    double count = -1;
    constexpr sv numerals[] = {"零", "一", "二", "三", "四", "五",
                               "六", "七", "八", "九", "十", "两"};
    for (sv times : {sv("次"), sv("回"), sv("遍")})
      for (std::size_t p = find_text(s, times); p != sv::npos && count < 0;
           p = find_text(s, times, p + 1))
        for (std::size_t d = 0; d < std::size(numerals); ++d)
          if (p >= 3 && s.substr(p - 3, 3) == numerals[d]) {
            count = d == 11 ? 2 : static_cast<double>(d);
            const auto q = std::find(c.quantities.begin(), c.quantities.end(), count);
            if (q != c.quantities.end()) c.quantities.erase(q);
          }
    if (days > 0) c.frequency = (count > 0 ? count : 1) / days;
    // an amount over the span, no count of occasions ("每个月存五千块", "每月房租五千元",
    // "每天喝两杯咖啡"): the amount per day, compared as one rate ("一年存六万块" is the same)
    if (days > 0 && count < 0 && c.quantities.size() == 1 && c.quantities.front() > 0 &&
        c.attribute.empty()) {
      c.frequency = c.quantities.front() / days;
      c.amount = true;
    }
  }
  // one term for one restriction: 吃素, 素食, 素食者 -> 素食
  for (sv veg : {sv("吃素"), sv("素食者"), sv("素食")})
    if (present.may_contain(veg) && find_text(s, veg) != sv::npos) {
      for (sv ch : {sv("吃"), sv("素"), sv("食"), sv("者")}) {
        const auto q = std::find(terms.begin(), terms.end(), ch);
        if (q != terms.end()) terms.erase(q);
      }
      terms.push_back("素食");
      break;
    }
  // General rule: a denial of 任何X ("any X": 不信任何宗教, 没有任何贷款) denies the whole
  // kind X; a kind and its kinds share characters in Chinese (宗教 / 基督教, 贷款 / 房贷, 医疗保险
  // / 医保), so X's characters become one term "任何X", which the claim judge finds stated by
  // any of those characters (claim_judge.hpp, denied_in). A character shared in another sense
  // is read as the kind too: "没有任何贷款" / "有存款" (款) is wrongly a conflict
  if (c.polarity < 0 && c.attribute.empty() && present.may_contain("任何"))
    if (const std::size_t a = find_text(s, "任何", body_at);
        a != sv::npos && a + 6 < s.size() && s.size() - a - 6 <= 12) {
      const sv kind = s.substr(a + 6);
      bool plain = true;
      for (std::size_t q = 0; q < kind.size() && plain; q += 3) plain = is_cjk_at(kind, q);
      if (plain && kind.size() % 3 == 0) {
        for (std::size_t q = 0; q < kind.size(); q += 3) {
          const auto at = std::find(terms.begin(), terms.end(), kind.substr(q, 3));
          if (at != terms.end()) terms.erase(at);
        }
        terms.push_back("任何" + std::string(kind));
      }
    }
  // a resignation ends the employment (辞职, 离职; 辞去教职, 辞掉了工作, 把工作辞了): the
  // employer attribute, denied; a job named before 的工作 ("辞去了银行的工作") is compared as
  // what the ending names
  if (c.attribute.empty() &&
      (find_text(s, "辞职") != sv::npos || find_text(s, "离职") != sv::npos ||
       find_text(s, "退休") != sv::npos ||
       ((find_text(s, "辞去") != sv::npos || find_text(s, "辞掉") != sv::npos ||
         find_text(s, "辞了") != sv::npos) &&
        find_text(s, "的工作") == sv::npos))) {
    c.attribute = "employer";
    c.kind = predicate_class::state;
  }
  // 是(一名/一个)医生: the occupation
  if (c.attribute.empty()) {
    sv rest = s.substr(body_at);
    if (rest.starts_with("是")) {
      rest.remove_prefix(3);
      for (sv det : {sv("一名"), sv("一个"), sv("一位"), sv("个"), sv("名")})
        if (rest.starts_with(det)) {
          rest.remove_prefix(det.size());
          break;
        }
      if (rest.ends_with("了")) rest.remove_suffix(3);
      // (a compound ends with its head: 中学老师, 中学语文老师 are 老师, a kind of it; up to
      // four characters before the head)
      if (std::any_of(cw::chinese_occupations.begin(), cw::chinese_occupations.end(), [&](sv o) {
            return rest.ends_with(o) && rest.size() <= o.size() + 12 &&
                   std::all_of(rest.begin(), rest.end(),
                               [](char ch) { return static_cast<unsigned char>(ch) >= 0x80; }) &&
                   [&] {
                     for (std::size_t q = 0; q + o.size() < rest.size(); q += 3)
                       if (lex.zh(rest.substr(q, 3)) != 0) return false;
                     return true;
                   }();
          })) {
        c.attribute = "occupation";
        c.kind = predicate_class::state;
        for (std::size_t q = 0; q + 3 <= rest.size(); q += 3)
          c.value.push_back(std::string(rest.substr(q, 3)));
      }
    }
  }
  // a date inside an attribute's value ("生日是10月3日") is the value, not a time qualifier
  if (!c.attribute.empty() && !c.value.empty()) time.clear();
  // a height, a weight, a year of birth (一米六, 体重120斤, 1985年出生, 85后)
  if (c.attribute.empty() && c.polarity > 0) {
    if (const auto m = chinese_measure(s)) {
      c.attribute = m->attribute;
      c.kind = predicate_class::state;
      c.value = {measure_text(m->value)};
      terms = c.value;
    } else if (const auto y = chinese_birth_year(s)) {
      c.attribute = "birth year";
      c.kind = predicate_class::state;
      c.value = {*y};
      terms = c.value;
      time.clear();
    } else if (const std::size_t b = find_text(s, "出生", body_at); b != sv::npos && b > body_at) {
      // "是5月20日出生的", "五月二十号出生": the date before 出生 is the birthday
      if (const auto md = chinese_month_day(s.substr(body_at, b - body_at))) {
        c.attribute = "birthday";
        c.kind = predicate_class::state;
        c.value = {*md};
        terms = c.value;
        time.clear();
      }
    }
  }
  // a scene word that is all the clause says is what it says ("经常出差": travels for work often)
  if (terms.empty() && c.attribute.empty() && !scene.empty()) terms.swap(scene);
  if (c.any_predicate && c.change) {
    // "退了健身卡", "钢琴课停了": the card or the class stands for the thing used; "辞去了老师的
    // 工作": the job of a teacher (a service noun of several characters, when more is said)
    std::vector<std::string> none;
    drop_service_nouns(terms, none);
    for (const sv noun : cw::service_nouns) {
      if (noun.size() < 6 || static_cast<unsigned char>(noun[0]) < 0x80) continue;
      std::size_t have = 0;
      for (std::size_t q = 0; q < noun.size(); q += 3)
        have += std::find(terms.begin(), terms.end(), noun.substr(q, 3)) != terms.end() ? 1 : 0;
      if (have * 3 != noun.size() || terms.size() <= have) continue;
      for (std::size_t q = 0; q < noun.size(); q += 3)
        std::erase(terms, std::string(noun.substr(q, 3)));
    }
  }
  if (c.kind == predicate_class::unknown && !terms.empty())
    c.kind = c.frequency >= 0 ? predicate_class::habit : predicate_class::state;
  if (c.event && !c.change && c.kind != predicate_class::preference)
    c.kind = predicate_class::event;
  c.terms = std::move(terms);
  c.scene = std::move(scene);
  c.time = std::move(time);
  if (c.any_predicate) c.object = c.terms;
  sort_unique(c.terms);
  sort_unique(c.object);
  sort_unique(c.value);
  sort_unique(c.scene);
  sort_unique(c.time);
  std::sort(c.quantities.begin(), c.quantities.end());
  add_restrictions(c, out);
  out.push_back(std::move(c));
}

// Splits Chinese text into clauses at ，；。！？、 (full and half width) and 但是/但/不过/可是/而.
inline std::vector<std::string> chinese_clauses(sv text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t l = utf8_len(static_cast<unsigned char>(text[i]));
    const sv ch = text.substr(i, l);
    if (ch == "，" || ch == "；" || ch == "。" || ch == "！" || ch == "？" || ch == "," ||
        ch == ";" || ch == "!" || ch == "?" || ch == "." || ch == "：") {
      flush();
      i += l;
      continue;
    }
    for (sv conj : {sv("但是"), sv("不过"), sv("可是"), sv("但")})
      if (text.substr(i).starts_with(conj) && !cur.empty()) {
        flush();
        i += conj.size();
        goto next;
      }
    if (ch == " ") {
      i += l;
      continue;
    }
    cur.append(ch);
    i += l;
  next:;
  }
  flush();
  return out;
}

}  // namespace memhealth::detail::claims
