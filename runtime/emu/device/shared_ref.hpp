// What `Shared<T>::operator[]` returns in the emulator: a proxy for one element, so that
// every read and write of shared memory can be recorded in the block's shadow (init and
// race checks). It supports what kernels do with an element: read (conversion to T),
// assignment, compound assignment, ++/--, and `&s[i]` for atomics.
//
// Every operation works on the temporary `s[i]` only. A proxy kept in a variable
// (`auto x = s[i]`) would be a reference where CUDA copies the value, so using one is a
// compile error with a message; write `T x = s[i]`. Also compile errors in emu: member
// access (`s[i].x`: copy the element out), binding `T&` to it, turning `&s[i]` into a raw
// pointer.
#pragma once

#include "runtime/emu/device/cuda_math.hpp"
#include "runtime/emu/device/state.hpp"

#include <type_traits>

namespace kiln::emu {

template <class...> inline constexpr bool kNotEmulated = false;

inline constexpr unsigned kShadowChecks = KILN_EMU_CHECK_SHARED_INIT | KILN_EMU_CHECK_RACE;

// `&s[i]`: an address in shared memory that only atomics accept.
template <class T> struct SharedAddr {
  T* p;
  unsigned checks;
  template <class U> operator U*() const {
    static_assert(kNotEmulated<U>, "kiln emu: a raw pointer into shared memory escapes the "
                                   "checks; index the Shared<T> (or kiln::view_as<U>) instead");
    return nullptr;
  }
};

#define KILN_EMU_KEPT_PROXY                                                                        \
  "kiln emu: a Shared<T> element proxy kept in a variable (`auto x = s[i]`) is a reference in "    \
  "emu but a copy on the device; write `T x = s[i]`"

template <class T> class SharedRef {
public:
  SharedRef(T* p, unsigned checks) : p_(p), checks_(checks & kShadowChecks) {}

  operator T() && { return load(); }
  const SharedRef& operator=(const T& v) && {
    store(v);
    return *this;
  }
  const SharedRef& operator=(SharedRef&& o) && {
    store(o.load());
    return *this;
  }

#define KILN_EMU_COMPOUND(op)                                                                      \
  template <class U>                                                                               \
  requires requires(T a, U b) { a op static_cast<U&&>(b); }                                        \
  const SharedRef& operator op(U v)&& { /* by value: U may be another element's proxy */           \
    T t = load();                                                                                  \
    t op static_cast<U&&>(v);                                                                      \
    store(t);                                                                                      \
    return *this;                                                                                  \
  }                                                                                                \
  template <class U> void operator op(const U&)& {                                                 \
    static_assert(kNotEmulated<U>, KILN_EMU_KEPT_PROXY);                                           \
  }
  KILN_EMU_COMPOUND(+=)
  KILN_EMU_COMPOUND(-=)
  KILN_EMU_COMPOUND(*=)
  KILN_EMU_COMPOUND(/=)
  KILN_EMU_COMPOUND(%=)
  KILN_EMU_COMPOUND(&=)
  KILN_EMU_COMPOUND(|=)
  KILN_EMU_COMPOUND(^=)
  KILN_EMU_COMPOUND(<<=)
  KILN_EMU_COMPOUND(>>=)
#undef KILN_EMU_COMPOUND

  const SharedRef& operator++() && requires std::is_arithmetic_v<T> {
    return static_cast<SharedRef&&>(*this) += T(1);
  }
  const SharedRef& operator--() && requires std::is_arithmetic_v<T> {
    return static_cast<SharedRef&&>(*this) -= T(1);
  }
  T operator++(int) && requires std::is_arithmetic_v<T> {
    T t = load();
    store(T(t + 1));
    return t;
  }
  T operator--(int) && requires std::is_arithmetic_v<T> {
    T t = load();
    store(T(t - 1));
    return t;
  }

  SharedAddr<T> operator&() && { return SharedAddr<T>{p_, checks_}; }

  // A proxy kept in a variable: every use is a compile error naming the problem.
  template <class U>
  requires std::is_same_v<U, T>
  operator U() const& {
    static_assert(kNotEmulated<U>, KILN_EMU_KEPT_PROXY);
    return load();
  }
  template <class U> void operator=(const U&) & {
    static_assert(kNotEmulated<U>, KILN_EMU_KEPT_PROXY);
  }

private:
  T load() const {
    if (checks_) shadow_read(p_, sizeof(T));
    return *p_;
  }
  void store(const T& v) const {
    if (checks_) shadow_write(p_, sizeof(T));
    *p_ = v;
  }

  T* p_;
  unsigned checks_;
};

template <class T> struct value_of<SharedRef<T>> { using type = T; };

template <class T> inline T shared_atomic_add(SharedAddr<T> a, T v) {
  if (a.checks) shadow_atomic(a.p, sizeof(T));
  const T old = *a.p;
  *a.p = T(old + v); // one OS thread runs the whole block: no other thread can interleave
  return old;
}

} // namespace kiln::emu

inline int atomicAdd(kiln::emu::SharedAddr<int> a, int v) {
  return kiln::emu::shared_atomic_add(a, v);
}
inline unsigned atomicAdd(kiln::emu::SharedAddr<unsigned> a, unsigned v) {
  return kiln::emu::shared_atomic_add(a, v);
}
inline unsigned long long atomicAdd(kiln::emu::SharedAddr<unsigned long long> a,
                                    unsigned long long v) {
  return kiln::emu::shared_atomic_add(a, v);
}
inline float atomicAdd(kiln::emu::SharedAddr<float> a, float v) {
  return kiln::emu::shared_atomic_add(a, v);
}
inline double atomicAdd(kiln::emu::SharedAddr<double> a, double v) {
  return kiln::emu::shared_atomic_add(a, v);
}
