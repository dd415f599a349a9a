#include "pdsh_text.hpp"

namespace tug::gen::pdsh {

word_list::word_list(std::vector<std::pair<std::string_view, int>> words) {
  for (auto [w, weight] : words) {
    for (int i = 0; i < weight; ++i)
      _lookup.push_back(static_cast<uint16_t>(_words.size()));
    _words.push_back(w);
  }
  _last = static_cast<int64_t>(_lookup.size()) - 1;
}

word_list::word_list(std::vector<std::string_view> words) : _words(std::move(words)) {
  for (size_t i = 0; i < _words.size(); ++i)
    _lookup.push_back(static_cast<uint16_t>(i));
  _last = static_cast<int64_t>(_lookup.size()) - 1;
}

const word_list& colors() {
  static const word_list w(std::vector<std::string_view>{
      "almond",    "antique",    "aquamarine", "azure",     "beige",     "bisque",     "black",     "blanched",
      "blue",      "blush",      "brown",      "burlywood", "burnished", "chartreuse", "chiffon",   "chocolate",
      "coral",     "cornflower", "cornsilk",   "cream",     "cyan",      "dark",       "deep",      "dim",
      "dodger",    "drab",       "firebrick",  "floral",    "forest",    "frosted",    "gainsboro", "ghost",
      "goldenrod", "green",      "grey",       "honeydew",  "hot",       "indian",     "ivory",     "khaki",
      "lace",      "lavender",   "lawn",       "lemon",     "light",     "lime",       "linen",     "magenta",
      "maroon",    "medium",     "metallic",   "midnight",  "mint",      "misty",      "moccasin",  "navajo",
      "navy",      "olive",      "orange",     "orchid",    "pale",      "papaya",     "peach",     "peru",
      "pink",      "plum",       "powder",     "puff",      "purple",    "red",        "rose",      "rosy",
      "royal",     "saddle",     "salmon",     "sandy",     "seashell",  "sienna",     "sky",       "slate",
      "smoke",     "snow",       "spring",     "steel",     "tan",       "thistle",    "tomato",    "turquoise",
      "violet",    "wheat",      "white",      "yellow"});
  return w;
}

const word_list& type_syllable1() {
  static const word_list w(std::vector<std::string_view>{"STANDARD", "SMALL", "MEDIUM", "LARGE", "ECONOMY", "PROMO"});
  return w;
}
const word_list& type_syllable2() {
  static const word_list w(std::vector<std::string_view>{"ANODIZED", "BURNISHED", "PLATED", "POLISHED", "BRUSHED"});
  return w;
}
const word_list& type_syllable3() {
  static const word_list w(std::vector<std::string_view>{"TIN", "NICKEL", "BRASS", "STEEL", "COPPER"});
  return w;
}
const word_list& container_syllable1() {
  static const word_list w(std::vector<std::string_view>{"SM", "LG", "MED", "JUMBO", "WRAP"});
  return w;
}
const word_list& container_syllable2() {
  static const word_list w(std::vector<std::string_view>{"CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"});
  return w;
}
const word_list& segments() {
  static const word_list w(
      std::vector<std::string_view>{"AUTOMOBILE", "BUILDING", "FURNITURE", "MACHINERY", "HOUSEHOLD"});
  return w;
}
const word_list& priorities() {
  static const word_list w(std::vector<std::string_view>{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"});
  return w;
}
const word_list& instructions() {
  static const word_list w(
      std::vector<std::string_view>{"DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"});
  return w;
}
const word_list& modes() {
  static const word_list w(std::vector<std::string_view>{"REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"});
  return w;
}

namespace {

using weighted = std::vector<std::pair<std::string_view, int>>;

const word_list& nouns() {
  static const word_list w(weighted{
      {"packages", 40},   {"requests", 40},    {"accounts", 40},    {"deposits", 40},     {"foxes", 20},
      {"ideas", 20},      {"theodolites", 20}, {"pinto beans", 20}, {"instructions", 20}, {"dependencies", 10},
      {"excuses", 10},    {"platelets", 10},   {"asymptotes", 10},  {"courts", 5},        {"dolphins", 5},
      {"multipliers", 1}, {"sauternes", 1},    {"warthogs", 1},     {"frets", 1},         {"dinos", 1},
      {"attainments", 1}, {"somas", 1},        {"Tiresias", 1},     {"patterns", 1},      {"forges", 1},
      {"braids", 1},      {"frays", 1},        {"warhorses", 1},    {"dugouts", 1},       {"notornis", 1},
      {"epitaphs", 1},    {"pearls", 1},       {"tithes", 1},       {"waters", 1},        {"orbits", 1},
      {"gifts", 1},       {"sheaves", 1},      {"depths", 1},       {"sentiments", 1},    {"decoys", 1},
      {"realms", 1},      {"pains", 1},        {"grouches", 1},     {"escapades", 1},     {"hockey players", 1}});
  return w;
}

const word_list& verbs() {
  static const word_list w(weighted{
      {"sleep", 20}, {"wake", 20},   {"are", 20},   {"cajole", 20},   {"haggle", 20},  {"nag", 10},    {"use", 10},
      {"boost", 10}, {"affix", 5},   {"detect", 5}, {"integrate", 5}, {"maintain", 1}, {"nod", 1},     {"was", 1},
      {"lose", 1},   {"sublate", 1}, {"solve", 1},  {"thrash", 1},    {"promise", 1},  {"engage", 1},  {"hinder", 1},
      {"print", 1},  {"x-ray", 1},   {"breach", 1}, {"eat", 1},       {"grow", 1},     {"impress", 1}, {"mold", 1},
      {"poach", 1},  {"serve", 1},   {"run", 1},    {"dazzle", 1},    {"snooze", 1},   {"doze", 1},    {"unwind", 1},
      {"kindle", 1}, {"play", 1},    {"hang", 1},   {"believe", 1},   {"doubt", 1}});
  return w;
}

const word_list& adjectives() {
  static const word_list w(
      weighted{{"special", 20}, {"pending", 20},  {"unusual", 20}, {"express", 20}, {"furious", 1}, {"sly", 1},
               {"careful", 1},  {"blithe", 1},    {"quick", 1},    {"fluffy", 1},   {"slow", 1},    {"quiet", 1},
               {"ruthless", 1}, {"thin", 1},      {"close", 1},    {"dogged", 1},   {"daring", 1},  {"brave", 1},
               {"stealthy", 1}, {"permanent", 1}, {"enticing", 1}, {"idle", 1},     {"busy", 1},    {"regular", 50},
               {"final", 40},   {"ironic", 40},   {"even", 30},    {"bold", 20},    {"silent", 10}});
  return w;
}

const word_list& adverbs() {
  static const word_list w(weighted{
      {"sometimes", 1},   {"always", 1},     {"never", 1},     {"furiously", 50}, {"slyly", 50},    {"carefully", 50},
      {"blithely", 40},   {"quickly", 30},   {"fluffily", 20}, {"slowly", 1},     {"quietly", 1},   {"ruthlessly", 1},
      {"thinly", 1},      {"closely", 1},    {"doggedly", 1},  {"daringly", 1},   {"bravely", 1},   {"stealthily", 1},
      {"permanently", 1}, {"enticingly", 1}, {"idly", 1},      {"busily", 1},     {"regularly", 1}, {"finally", 1},
      {"ironically", 1},  {"evenly", 1},     {"boldly", 1},    {"silently", 1}});
  return w;
}

const word_list& prepositions() {
  static const word_list w(weighted{{"about", 50},
                                    {"above", 50},
                                    {"according to", 50},
                                    {"across", 50},
                                    {"after", 50},
                                    {"against", 40},
                                    {"along", 40},
                                    {"alongside of", 30},
                                    {"among", 30},
                                    {"around", 20},
                                    {"at", 10},
                                    {"atop", 1},
                                    {"before", 1},
                                    {"behind", 1},
                                    {"beneath", 1},
                                    {"beside", 1},
                                    {"besides", 1},
                                    {"between", 1},
                                    {"beyond", 1},
                                    {"by", 1},
                                    {"despite", 1},
                                    {"during", 1},
                                    {"except", 1},
                                    {"for", 1},
                                    {"from", 1},
                                    {"in place of", 1},
                                    {"inside", 1},
                                    {"instead of", 1},
                                    {"into", 1},
                                    {"near", 1},
                                    {"of", 1},
                                    {"on", 1},
                                    {"outside", 1},
                                    {"over", 1},
                                    {"past", 1},
                                    {"since", 1},
                                    {"through", 1},
                                    {"throughout", 1},
                                    {"to", 1},
                                    {"toward", 1},
                                    {"under", 1},
                                    {"until", 1},
                                    {"up", 1},
                                    {"upon", 1},
                                    {"without", 1},
                                    {"with", 1},
                                    {"within", 1}});
  return w;
}

const word_list& auxiliaries() {
  static const word_list w(std::vector<std::string_view>{
      "do", "may", "might", "shall", "will", "would", "can", "could", "should", "ought to", "must", "will have to",
      "shall have to", "could have to", "should have to", "must have to", "need to", "try to"});
  return w;
}

const word_list& terminators() {
  static const word_list w(weighted{{".", 50}, {";", 1}, {":", 1}, {"?", 1}, {"!", 1}, {"--", 1}});
  return w;
}

// Grammar productions as letters: N noun phrase, V verb phrase, P prepositional phrase, T terminator;
// in phrases N noun, J adjective, D adverb, V verb, X auxiliary, ',' a comma after the previous word.
const word_list& sentences() {
  static const word_list w(weighted{{"NVT", 3}, {"NVPT", 3}, {"NVNT", 3}, {"NPVNT", 1}, {"NPVPT", 1}});
  return w;
}
const word_list& noun_phrases() {
  static const word_list w(weighted{{"N", 10}, {"JN", 20}, {"J,JN", 10}, {"DJN", 50}});
  return w;
}
const word_list& verb_phrases() {
  static const word_list w(weighted{{"V", 30}, {"XV", 1}, {"VD", 40}, {"XVD", 1}});
  return w;
}

void append_word(std::string& out, std::string_view w) {
  if (!out.empty() && out.back() != ' ') out.push_back(' ');
  out.append(w);
}

void append_phrase(std::string& out, rng& r, std::string_view shape) {
  for (char c : shape) {
    switch (c) {
      case 'N':
        append_word(out, nouns().pick(r));
        break;
      case 'J':
        append_word(out, adjectives().pick(r));
        break;
      case 'D':
        append_word(out, adverbs().pick(r));
        break;
      case 'V':
        append_word(out, verbs().pick(r));
        break;
      case 'X':
        append_word(out, auxiliaries().pick(r));
        break;
      case ',':
        out.push_back(',');
        break;
    }
  }
}

void append_sentence(std::string& out, rng& r) {
  for (char c : sentences().pick(r)) {
    switch (c) {
      case 'N':
        append_phrase(out, r, noun_phrases().pick(r));
        break;
      case 'V':
        append_phrase(out, r, verb_phrases().pick(r));
        break;
      case 'P':
        append_word(out, prepositions().pick(r));
        append_word(out, "the");
        append_phrase(out, r, noun_phrases().pick(r));
        break;
      case 'T':
        out.append(terminators().pick(r));
        out.push_back(' ');
        break;
    }
  }
}

constexpr size_t text_pool_bytes = 16 << 20;

}  // namespace

std::string_view text_pool() {
  static const std::string pool = [] {
    std::string s;
    s.reserve(text_pool_bytes + 256);
    rng r(0x7e47'9001);  // fixed: the pool is the same for every seed, as in the reference generator
    while (s.size() < text_pool_bytes)
      append_sentence(s, r);
    s.resize(text_pool_bytes);
    return s;
  }();
  return pool;
}

}  // namespace tug::gen::pdsh
