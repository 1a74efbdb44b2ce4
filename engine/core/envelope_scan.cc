#include "core/envelope_scan.h"

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "common/byte_scan.h"
#include "core/envelope_time.h"
#include "model/schedule.h"

namespace trigd {
namespace {

// Deeper than any real payload and well inside ParseEnvelope's limit (64): anything deeper is
// "not sure", so ParseEnvelope's nesting refusal never applies to what the scanner accepts.
constexpr int kMaxScanDepth = 32;

// Beyond this many characters a number could overflow a double (nlohmann then refuses the
// document); without an exponent it cannot below.
constexpr size_t kMaxNumberChars = 300;

// What the scanner saw of one value. Only `kind` is set up front (a scan makes a few dozen of
// these); the rest is written by whoever sets the kind, and read only for that kind.
struct Value {
  enum Kind : uint8_t { kNone, kString, kNumber, kObject, kArray, kTrue, kFalse, kNull };
  Kind kind = kNone;
  bool escaped;           // string: holds a backslash escape, so text is not its value
  bool integer;           // number: digits only, no sign, fraction or exponent
  bool nonempty_strings;  // array: every element is a non-empty string
  uint32_t elements;      // array: number of elements
  // string: the raw characters between the quotes; number: the token; array: the whole array,
  // brackets included (ScanEnvelopeEvent reads a partition list from it)
  std::string_view text;
};

// The keys of the objects being scanned, innermost last: ParseEnvelope refuses an object that
// holds a key twice, at any depth, so the scanner answers "not sure" for one. Objects of
// envelopes have a handful of keys; more than kMaxOpenKeys open at once is "not sure" too.
class OpenKeys {
 public:
  // Where the keys of an object that starts now begin.
  size_t Open() const { return size_; }
  // False when `key` is already a key of the object opened at `base`, or when full.
  bool Add(size_t base, std::string_view key) {
    for (size_t i = base; i < size_; ++i) {
      if (keys_[i] == key) return false;
    }
    if (size_ == kMaxOpenKeys) return false;
    keys_[size_++] = key;
    return true;
  }
  void Close(size_t base) { size_ = base; }

 private:
  static constexpr size_t kMaxOpenKeys = 64;
  std::string_view keys_[kMaxOpenKeys];
  size_t size_ = 0;
};

// The members of the envelope and of its payload that ParseEnvelope reads.
struct Fields {
  Value id, type, time, payload;
  Value dataset, partitions, bytes;
  Value program, run_id, status, attempt, reason, lineage, worker;
  Value schedule, fire_time;
};

// The first quote from p on, or end.
const char* NextQuote(const char* p, const char* end) {
#if defined(__SSE2__)
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))))) {
      return p + std::countr_zero(mask);
    }
    p += 16;
  }
#endif
  while (p != end && *p != '"') ++p;
  return p;
}

// RFC 8259's number grammar, from p (a '-' or not). An exponent or a very long number is "not
// sure": nlohmann refuses a document whose number overflows a double.
bool NumberToken(const char*& p, const char* end, Value& v) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const char* start = p;
  bool integer = true;
  if (*p == '-') {
    integer = false;  // ParseEnvelope's integers are never negative when valid
    ++p;
  }
  if (p == end || !digit(*p)) return false;
  if (*p == '0') {
    ++p;
  } else {
    while (p != end && digit(*p)) ++p;
  }
  if (p != end && *p == '.') {
    integer = false;
    ++p;
    if (p == end || !digit(*p)) return false;
    while (p != end && digit(*p)) ++p;
  }
  if (p != end && (*p == 'e' || *p == 'E')) return false;
  if (static_cast<size_t>(p - start) > kMaxNumberChars) return false;
  v.kind = Value::kNumber;
  v.integer = integer;
  v.text = std::string_view(start, p - start);
  return true;
}

// Where a member of the envelope (TopSlot) or of its payload (PayloadSlot) that ParseEnvelope
// reads goes; null for any other member.
Value* TopSlot(Fields& f, std::string_view key) {
  if (key == "id") return &f.id;
  if (key == "type") return &f.type;
  if (key == "time") return &f.time;
  if (key == "payload") return &f.payload;
  return nullptr;
}

Value* PayloadSlot(Fields& f, std::string_view key) {
  switch (key.size()) {
    case 6:
      if (key == "run_id") return &f.run_id;
      if (key == "status") return &f.status;
      if (key == "reason") return &f.reason;
      if (key == "worker") return &f.worker;
      return nullptr;
    case 7:
      if (key == "dataset") return &f.dataset;
      if (key == "program") return &f.program;
      if (key == "attempt") return &f.attempt;
      if (key == "lineage") return &f.lineage;
      return nullptr;
    case 5: return key == "bytes" ? &f.bytes : nullptr;
    case 8: return key == "schedule" ? &f.schedule : nullptr;
    case 9: return key == "fire_time" ? &f.fire_time : nullptr;
    case 10: return key == "partitions" ? &f.partitions : nullptr;
    default: return nullptr;
  }
}

// Any input: escapes, UTF-8 and whitespace checked as nlohmann checks them. Envelopes of plain
// ASCII take PlainScanner instead.
class Scanner {
 public:
  explicit Scanner(std::string_view bytes)
      : p_(reinterpret_cast<const unsigned char*>(bytes.data())), end_(p_ + bytes.size()) {}

  // The whole input: one object, whitespace around it, nothing else.
  bool Envelope(Fields& f) {
    SkipSpace();
    if (p_ == end_ || *p_ != '{') return false;
    if (!Object(1, &f, nullptr)) return false;
    SkipSpace();
    return p_ == end_;
  }

 private:
  void SkipSpace() {
    while (p_ != end_ && *p_ <= ' ' && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  // An object at p_ ('{'). `top` collects the envelope's members, `payload` the payload's;
  // both null for any other object.
  bool Object(int depth, Fields* top, Fields* payload) {
    if (depth > kMaxScanDepth) return false;
    ++p_;
    SkipSpace();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    const size_t keys = keys_.Open();
    while (true) {
      if (p_ == end_ || *p_ != '"') return false;
      Value key;
      if (!String(key)) return false;
      // An escaped key could spell another ("a" and "\u0061"): not compared, "not sure".
      if (key.escaped || !keys_.Add(keys, key.text)) return false;
      SkipSpace();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      SkipSpace();
      Value* slot = nullptr;
      if (top || payload) slot = top ? TopSlot(*top, key.text) : PayloadSlot(*payload, key.text);
      Value scratch;
      Value& value = slot ? *slot : scratch;
      Fields* nested_payload = top && slot == &top->payload ? top : nullptr;
      if (!Any(value, depth, nested_payload)) return false;
      SkipSpace();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        SkipSpace();
        continue;
      }
      if (*p_ != '}') return false;
      ++p_;
      keys_.Close(keys);
      return true;
    }
  }

  // Any value at p_, inside a container at `depth`. `payload_of`: this value is the envelope's
  // payload; its members go to payload_of's fields.
  bool Any(Value& v, int depth, Fields* payload_of) {
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': v.kind = Value::kObject; return Object(depth + 1, nullptr, payload_of);
      case '[': v.kind = Value::kArray; return Array(v, depth + 1);
      case '"': return String(v);
      case 't': v.kind = Value::kTrue; return Literal("true");
      case 'f': v.kind = Value::kFalse; return Literal("false");
      case 'n': v.kind = Value::kNull; return Literal("null");
      default: return Number(v);
    }
  }

  bool Array(Value& v, int depth) {
    if (depth > kMaxScanDepth) return false;
    v.elements = 0;
    v.nonempty_strings = true;
    const unsigned char* start = p_;
    auto close = [&] {
      ++p_;
      v.text = std::string_view(reinterpret_cast<const char*>(start), p_ - start);
      return true;
    };
    ++p_;
    SkipSpace();
    if (p_ != end_ && *p_ == ']') return close();
    while (true) {
      Value element;
      if (!Any(element, depth, nullptr)) return false;
      ++v.elements;
      if (element.kind != Value::kString || element.text.empty()) v.nonempty_strings = false;
      SkipSpace();
      if (p_ == end_) return false;
      if (*p_ == ',') {
        ++p_;
        SkipSpace();
        continue;
      }
      if (*p_ != ']') return false;
      return close();
    }
  }

  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size()) return false;
    for (char c : word) {
      if (*p_++ != static_cast<unsigned char>(c)) return false;
    }
    return true;
  }

  bool Number(Value& v) {
    const char* p = reinterpret_cast<const char*>(p_);
    if (!NumberToken(p, reinterpret_cast<const char*>(end_), v)) return false;
    p_ = reinterpret_cast<const unsigned char*>(p);
    return true;
  }

  static int Hex(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // \uXXXX after the backslash and 'u' have been read: the code unit, or -1.
  int CodeUnit() {
    if (end_ - p_ < 4) return -1;
    int unit = 0;
    for (int i = 0; i < 4; ++i) {
      int h = Hex(*p_++);
      if (h < 0) return -1;
      unit = unit * 16 + h;
    }
    return unit;
  }

  bool Continuation(unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    if (p_ == end_ || *p_ < lo || *p_ > hi) return false;
    ++p_;
    return true;
  }

  // The bytes of `word` that need a closer look inside a string (a quote, a backslash, a
  // control character or a non-ASCII byte), flagged by their high bit. Only the lowest flag is
  // exact (a borrow can flag bytes after it), which is all the caller uses.
  static uint64_t SpecialBytes(uint64_t word) {
    return byte_scan::HasByteBelow(word, 0x20) | (word & byte_scan::kHighBits) | byte_scan::HasByte(word, '"') |
           byte_scan::HasByte(word, '\\');
  }

  // From p, past the plain ASCII bytes of a string (not a quote, backslash, control character
  // or non-ASCII byte) sixteen or eight at a time: at the first byte that is not plain, or
  // fewer than eight bytes before the end.
  static const unsigned char* SkipPlain(const unsigned char* p, const unsigned char* end) {
#if defined(__SSE2__)
    while (end - p >= 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      // Signed: bytes from 0x80 compare below ' ' too, and they are not plain either.
      const __m128i special =
          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                       _mm_cmplt_epi8(v, _mm_set1_epi8(' ')));
      if (const unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(special))) {
        return p + std::countr_zero(mask);
      }
      p += 16;
    }
#endif
    if constexpr (std::endian::native == std::endian::little) {
      while (end - p >= 8) {
        uint64_t word;
        std::memcpy(&word, p, 8);
        if (const uint64_t special = SpecialBytes(word)) return p + std::countr_zero(special) / 8;
        p += 8;
      }
    }
    return p;
  }

  // A string at p_ ('"'): JSON escapes and well-formed UTF-8 (RFC 3629: no overlong forms,
  // surrogates or code points past U+10FFFF), as nlohmann checks them.
  bool String(Value& v) {
    const unsigned char* p = p_ + 1;
    const unsigned char* const end = end_;
    const unsigned char* const start = p;
    bool escaped = false;
    while (true) {
      p = SkipPlain(p, end);
      if (p == end) return false;
      const unsigned char c = *p;
      if (c == '"') break;
      if (c < 0x20) return false;
      if (c < 0x80 && c != '\\') {
        ++p;
        continue;
      }
      p_ = p;
      if (c == '\\') {
        escaped = true;
        if (!Escape()) return false;
      } else if (!Utf8()) {
        return false;
      }
      p = p_;
    }
    v.kind = Value::kString;
    v.escaped = escaped;
    v.text = std::string_view(reinterpret_cast<const char*>(start), p - start);
    p_ = p + 1;
    return true;
  }

  // An escape at p_ ('\\').
  bool Escape() {
    if (++p_ == end_) return false;
    const unsigned char e = *p_++;
    if (e == 'u') {
      const int unit = CodeUnit();
      // U+0000 is refused by ParseEnvelope (PostgreSQL's text and jsonb cannot hold it).
      if (unit <= 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return false;
      if (unit >= 0xD800 && unit <= 0xDBFF) {
        if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
        p_ += 2;
        const int low = CodeUnit();
        if (low < 0xDC00 || low > 0xDFFF) return false;
      }
      return true;
    }
    return e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't';
  }

  // A multi-byte UTF-8 sequence at p_ (a byte >= 0x80).
  bool Utf8() {
    const unsigned char c = *p_++;
    if (c >= 0xC2 && c <= 0xDF) return Continuation();
    if (c == 0xE0) return Continuation(0xA0) && Continuation();
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return Continuation() && Continuation();
    if (c == 0xED) return Continuation(0x80, 0x9F) && Continuation();
    if (c == 0xF0) return Continuation(0x90) && Continuation() && Continuation();
    if (c >= 0xF1 && c <= 0xF3) return Continuation() && Continuation() && Continuation();
    if (c == 0xF4) return Continuation(0x80, 0x8F) && Continuation() && Continuation();
    return false;
  }

  const unsigned char* p_;
  const unsigned char* end_;
  OpenKeys keys_;
};

// An input of plain ASCII (AllPlain: printable, no backslash, no whitespace but spaces): a string
// is whatever lies between two quotes and needs no check, which leaves only the structure to
// follow. Most envelopes are plain.
class PlainScanner {
 public:
  explicit PlainScanner(std::string_view bytes) : p_(bytes.data()), end_(p_ + bytes.size()) {}

  bool Envelope(Fields& f) {
    Space();
    if (p_ == end_ || *p_ != '{') return false;
    ++p_;
    if (!Members(f, /*top=*/true)) return false;
    Space();
    return p_ == end_;
  }

 private:
  void Space() {
    while (p_ != end_ && *p_ == ' ') ++p_;
  }

  // A string at p_ ('"').
  bool String(std::string_view& text) {
    const char* quote = NextQuote(p_ + 1, end_);
    if (quote == end_) return false;
    text = std::string_view(p_ + 1, quote - p_ - 1);
    p_ = quote + 1;
    return true;
  }

  // After a value inside a container: true at ',' (moved past it and the spaces after),
  // false at `close` (moved past it); `ok` false for anything else.
  bool Next(char close, bool& ok) {
    Space();
    if (p_ != end_ && *p_ == ',') {
      ++p_;
      Space();
      return true;
    }
    ok = p_ != end_ && *p_ == close;
    if (ok) ++p_;
    return false;
  }

  // The members of an object whose '{' was passed: each key a string not repeated in the
  // object, then `value(key)` reads its value (p_ at its first byte); true after the '}'.
  template <typename ReadValue>
  bool Object(ReadValue&& value) {
    Space();
    if (p_ != end_ && *p_ == '}') {
      ++p_;
      return true;
    }
    bool ok = true;
    const size_t keys = keys_.Open();
    do {
      std::string_view key;
      if (p_ == end_ || *p_ != '"' || !String(key) || !keys_.Add(keys, key)) return false;
      Space();
      if (p_ == end_ || *p_ != ':') return false;
      ++p_;
      Space();
      if (p_ == end_ || !value(key)) return false;
    } while (Next('}', ok));
    keys_.Close(keys);
    return ok;
  }

  // The members of the envelope (top) or of its payload, after the '{'.
  bool Members(Fields& f, bool top) {
    return Object([&](std::string_view key) {
      Value* slot = top ? TopSlot(f, key) : PayloadSlot(f, key);
      if (!slot) return Skip(top ? 1 : 2);
      if (slot != &f.payload) return Member(*slot, top ? 1 : 2);
      // ParseEnvelope refuses a payload that is not an object, whatever the type.
      if (*p_ != '{') return false;
      ++p_;
      f.payload.kind = Value::kObject;
      return Members(f, /*top=*/false);
    });
  }

  // A member's value that ParseEnvelope reads, inside a container at `depth`.
  bool Member(Value& v, int depth) {
    switch (*p_) {
      case '"':
        v.kind = Value::kString;
        v.escaped = false;
        return String(v.text);
      case '[': {
        v.kind = Value::kArray;
        v.elements = 0;
        v.nonempty_strings = true;
        const char* start = p_;
        ++p_;
        Space();
        if (p_ != end_ && *p_ == ']') {
          ++p_;
          v.text = std::string_view(start, p_ - start);
          return true;
        }
        bool ok = true;
        do {
          if (p_ == end_) return false;
          ++v.elements;
          if (*p_ == '"') {
            std::string_view text;
            if (!String(text)) return false;
            if (text.empty()) v.nonempty_strings = false;
          } else {
            v.nonempty_strings = false;
            if (!Skip(depth + 1)) return false;
          }
        } while (Next(']', ok));
        v.text = std::string_view(start, p_ - start);
        return ok;
      }
      case '{': v.kind = Value::kObject; break;
      case 't': v.kind = Value::kTrue; break;
      case 'f': v.kind = Value::kFalse; break;
      case 'n': v.kind = Value::kNull; break;
      default: return NumberToken(p_, end_, v);
    }
    return Skip(depth);
  }

  // Any value at p_ (not at the end), inside a container at `depth`: checked, then passed.
  bool Skip(int depth) {
    switch (*p_) {
      case '"': {
        std::string_view text;
        return String(text);
      }
      case '{':
        if (depth + 1 > kMaxScanDepth) return false;
        ++p_;
        return Object([&](std::string_view) { return Skip(depth + 1); });
      case '[': {
        if (depth + 1 > kMaxScanDepth) return false;
        ++p_;
        Space();
        if (p_ != end_ && *p_ == ']') {
          ++p_;
          return true;
        }
        bool ok = true;
        do {
          if (p_ == end_ || !Skip(depth + 1)) return false;
        } while (Next(']', ok));
        return ok;
      }
      case 't': return Literal("true");
      case 'f': return Literal("false");
      case 'n': return Literal("null");
      default: {
        Value number;
        return NumberToken(p_, end_, number);
      }
    }
  }

  bool Literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::memcmp(p_, word.data(), word.size()) != 0) {
      return false;
    }
    p_ += word.size();
    return true;
  }

  const char* p_;
  const char* const end_;
  OpenKeys keys_;
};

// Whether every byte is printable ASCII (0x20-0x7E, or DEL, which JSON allows in strings) other
// than a backslash: no escape, no UTF-8 to check, no whitespace but spaces.
bool AllPlain(std::string_view bytes) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const unsigned char* const end = p + bytes.size();
#if defined(__SSE2__)
  __m128i special = _mm_setzero_si128();
  for (; end - p >= 16; p += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    // Signed: bytes from 0x80 compare below ' ' too.
    special = _mm_or_si128(special,
                           _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
  }
  if (p != end && bytes.size() >= 16) {
    // The last (partial) block, read as the last sixteen bytes.
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(end - 16));
    special = _mm_or_si128(special,
                           _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));
    p = end;
  }
  if (_mm_movemask_epi8(special) != 0) return false;
#endif
  for (; p != end; ++p) {
    if (*p < 0x20 || *p >= 0x80 || *p == '\\') return false;
  }
  return true;
}

// A string member whose value the scanner can read as is: present, a string, no escape, not
// empty.
bool PlainString(const Value& v) { return v.kind == Value::kString && !v.escaped && !v.text.empty(); }

bool AbsentOrNull(const Value& v) { return v.kind == Value::kNone || v.kind == Value::kNull; }

// An optional string member (absent, null or a string), as ParseEnvelope reads lineage and worker.
bool OptionalString(const Value& v) { return AbsentOrNull(v) || v.kind == Value::kString; }

// An optional string member's value when the scan can give it (absent or null: empty; a string
// without escapes: its text); false for an escaped one.
bool OptionalPlainValue(const Value& v, std::string& out) {
  if (AbsentOrNull(v)) {
    out.clear();
    return true;
  }
  if (v.escaped) return false;
  out.assign(v.text);
  return true;
}

// An integer the scan accepted (OptionalInteger): its value.
int64_t IntegerValue(const Value& v) {
  int64_t n = 0;
  for (char c : v.text) n = n * 10 + (c - '0');
  return n;
}

// An optional integer member, as ParseEnvelope's OptionalInteger accepts it with this minimum.
// 18 digits always fit an int64.
bool OptionalInteger(const Value& v, int64_t min) {
  if (AbsentOrNull(v)) return true;
  if (v.kind != Value::kNumber || !v.integer || v.text.size() > 18) return false;
  int64_t n = 0;
  for (char c : v.text) n = n * 10 + (c - '0');
  return n >= min;
}

bool KnownStatus(std::string_view s) {
  return s == "started" || s == "heartbeat" || s == "succeeded" || s == "failed" || s == "killed";
}

}  // namespace

std::string EnvelopeScan::EventKey() const {
  std::string key;
  EventKeyInto(key);
  return key;
}

void EnvelopeScan::EventKeyInto(std::string& out) const {
  out.assign(EventKeyPrefix(type));
  out.append(key_name);
}

namespace {

// ScanEnvelope, keeping what the scanner saw of the members in `f`.
bool ScanFields(std::string_view bytes, EnvelopeScan& out, Fields& f, size_t max_bytes) {
  if (bytes.size() > max_bytes) return false;
  const bool scanned = AllPlain(bytes) ? PlainScanner(bytes).Envelope(f) : Scanner(bytes).Envelope(f);
  if (!scanned) return false;
  // A plain id's text is its value, so a longer one is one ParseEnvelope refuses.
  if (!PlainString(f.id) || f.id.text.size() > kMaxEventIdBytes || f.type.kind != Value::kString || f.type.escaped ||
      f.time.kind != Value::kString || f.time.escaped || f.payload.kind != Value::kObject) {
    return false;
  }
  std::optional<TimePoint> time = ParseEnvelopeTimeFast(f.time.text);
  if (!time) return false;
  out.id = f.id.text;
  out.time = *time;
  const std::string_view type = f.type.text;
  if (type == "partition") {
    if (!PlainString(f.dataset) || f.partitions.kind != Value::kArray || f.partitions.elements == 0 ||
        !f.partitions.nonempty_strings || !OptionalInteger(f.bytes, 0)) {
      return false;
    }
    out.type = EventType::kPartition;
    out.key_name = f.dataset.text;
    return true;
  }
  if (type == "program") {
    // run_id's value is not read here, only that it is a non-empty string: an escape is
    // never empty.
    if (!PlainString(f.program) || f.run_id.kind != Value::kString || f.run_id.text.empty() ||
        f.status.kind != Value::kString || f.status.escaped || !KnownStatus(f.status.text) ||
        !OptionalInteger(f.attempt, 1) || !OptionalString(f.reason) || !OptionalString(f.lineage) ||
        !OptionalString(f.worker)) {
      return false;
    }
    out.type = EventType::kProgram;
    out.key_name = f.program.text;
    return true;
  }
  if (type == "tick") {
    if (!PlainString(f.schedule) || f.fire_time.kind != Value::kString || f.fire_time.escaped ||
        !ParseEnvelopeTimeFast(f.fire_time.text)) {
      return false;
    }
    const std::string_view schedule = f.schedule.text;
    const size_t slash = schedule.find('/');
    if (slash == 0 || slash == std::string_view::npos || slash + 1 == schedule.size() ||
        schedule.find('/', slash + 1) != std::string_view::npos) {
      return false;
    }
    out.type = EventType::kTick;
    out.key_name = schedule;
    return true;
  }
  return false;
}

}  // namespace

bool ScanEnvelope(std::string_view bytes, EnvelopeScan& out, size_t max_bytes) {
  Fields f;
  return ScanFields(bytes, out, f, max_bytes);
}

bool ScanEnvelopeEvent(std::string_view bytes, Event& event) {
  EnvelopeScan scan;
  Fields f;
  if (!ScanFields(bytes, scan, f, kMaxEventBytes)) return false;
  event = Event();
  event.id.assign(scan.id);
  event.type = scan.type;
  event.time = scan.time;
  switch (scan.type) {
    case EventType::kPartition: {
      // Every element is a non-empty string (checked by the scan); without a backslash in the
      // array, each one's value is the text between its quotes.
      const std::string_view list = f.partitions.text;
      if (list.find('\\') != std::string_view::npos) return false;
      event.partition.dataset.assign(f.dataset.text);
      event.partition.partitions.reserve(f.partitions.elements);
      for (size_t open = list.find('"'); open != std::string_view::npos;) {
        const size_t close = list.find('"', open + 1);
        event.partition.partitions.emplace_back(list.substr(open + 1, close - open - 1));
        open = list.find('"', close + 1);
      }
      if (!AbsentOrNull(f.bytes)) event.partition.bytes = IntegerValue(f.bytes);
      return true;
    }
    case EventType::kProgram: {
      ProgramPayload& p = event.program;
      if (f.run_id.escaped || !OptionalPlainValue(f.reason, p.reason) || !OptionalPlainValue(f.lineage, p.lineage) ||
          !OptionalPlainValue(f.worker, p.worker)) {
        return false;
      }
      p.program.assign(f.program.text);
      p.run_id.assign(f.run_id.text);
      p.status = *ProgramStatusFromName(f.status.text);
      if (!AbsentOrNull(f.attempt)) p.attempt = IntegerValue(f.attempt);
      return true;
    }
    case EventType::kTick:
      event.tick.schedule.assign(f.schedule.text);
      event.tick.fire_time = *ParseEnvelopeTimeFast(f.fire_time.text);
      return true;
    case EventType::kCustom: return false;  // never scanned
  }
  return false;
}

}  // namespace trigd
