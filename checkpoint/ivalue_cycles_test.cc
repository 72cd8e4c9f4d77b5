#include "checkpoint/ivalue_cycles.h"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <ATen/core/List.h>

#include "gtest/gtest.h"

namespace loom::checkpoint {
namespace {

using c10::IValue;

c10::impl::GenericDict EmptyDict() {
  return c10::impl::GenericDict(c10::AnyType::get(), c10::AnyType::get());
}

TEST(BreakIValueCyclesTest, LeavesAcyclicValuesAlone) {
  // A shared sub-dict reached twice is no cycle.
  c10::impl::GenericDict shared = EmptyDict();
  shared.insert(IValue("x"), IValue(1));
  c10::impl::GenericList list(c10::AnyType::get());
  list.push_back(IValue(shared));
  list.push_back(IValue(shared));
  const IValue tuple = c10::ivalue::Tuple::create({IValue(list), IValue(shared), IValue(2.5)});
  EXPECT_FALSE(BreakIValueCycles({tuple, IValue(shared), IValue(at::ones({2})), IValue()}));
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(shared.size(), 1u);
}

TEST(BreakIValueCyclesTest, ADictHoldingItselfIsFoundAndFreed) {
  at::Tensor payload = at::ones({3});
  {
    c10::impl::GenericDict dict = EmptyDict();
    dict.insert(IValue("payload"), IValue(payload));
    dict.insert(IValue("self"), IValue(dict));
    EXPECT_EQ(payload.use_count(), 2);
    EXPECT_TRUE(BreakIValueCycles({IValue(dict)}));
    EXPECT_EQ(dict.size(), 0u);
  }
  EXPECT_EQ(payload.use_count(), 1) << "the cycle still holds the tensor";
}

TEST(BreakIValueCyclesTest, ACycleThroughATupleAndADictIsFound) {
  c10::impl::GenericList list(c10::AnyType::get());
  const IValue tuple = c10::ivalue::Tuple::create({IValue(list), IValue(1)});
  c10::impl::GenericDict dict = EmptyDict();
  dict.insert(IValue("t"), tuple);
  list.push_back(IValue(dict));  // list -> dict -> tuple -> list
  EXPECT_TRUE(BreakIValueCycles({IValue(), tuple}));
  EXPECT_EQ(list.size(), 0u);
  EXPECT_EQ(dict.size(), 0u);
}

TEST(BreakIValueCyclesTest, DeepNestingNeedsNoDeepStack) {
  c10::impl::GenericList outer(c10::AnyType::get());
  c10::impl::GenericList inner = outer;
  for (int i = 0; i < 5000; ++i) {
    c10::impl::GenericList next(c10::AnyType::get());
    inner.push_back(IValue(next));
    inner = next;
  }
  EXPECT_FALSE(BreakIValueCycles({IValue(outer)}));
  inner.push_back(IValue(outer));  // close the loop at the bottom
  EXPECT_TRUE(BreakIValueCycles({IValue(outer)}));
  EXPECT_EQ(outer.size(), 0u);
}

}  // namespace
}  // namespace loom::checkpoint
