package io.github.sparkmultijoin.optimizer

import io.github.sparkmultijoin.optimizer.FusionVerdict.{HintMissesOuterInputs, NoSharedKey, OuterWithStaticInput, TooFewStreamingInputs, UnstableKeyType}

import org.apache.spark.sql.catalyst.util.UnsafeRowUtils
import org.apache.spark.sql.types.DataType

/** Streaming inputs of a chain (by index) one multi-join takes, and the classes of its key. */
private[optimizer] case class KeyGroup(inputs: Seq[Int], keyClasses: Seq[EquivalentKeys.KeyClass])

/**
 * Which inputs of a chain share a key, one multi-join a group.
 *
 * Why groups: a multi-join looks every input's rows up by one shared key, so only inputs whose
 * equi-join conditions make one key equal can go into one. With inner joins only, which commute
 * and associate, a chain may hold several such groups and inputs on none, which Spark's joins
 * join above the groups' multi-joins. With outer joins, the chain is one group or none.
 */
private[optimizer] object KeyGroups {

  /**
   * The key groups of a chain, the first to be joined as its
   * [[io.github.sparkmultijoin.model.JoinTree]], or why there is none. With outer joins, one
   * group of every input (all streaming) on a key spanning them all. With inner joins only, the
   * streaming inputs sharing the key class that has members over the most of them, at least
   * three; then, from the streaming inputs left, the next such group, and so on. Only the inputs
   * `eligibility` admits.
   */
  def of(chain: Chain, eligibility: Eligibility): Either[FusionVerdict, Seq[KeyGroup]] = {
    val inputs = chain.inputs
    val described = chain.described
    val admitted = inputs.indices.filter(input => eligibility.admits(inputs(input)))
    val streaming = admitted.filter(inputs(_).isStreaming)
    lazy val classes = EquivalentKeys.all(inputs, chain.conjuncts.map(_.expression))
    lazy val first = largestGroup(classes, streaming.toSet)
    if (chain.hasOuterJoins && admitted.length < inputs.length) {
      Left(HintMissesOuterInputs(described))
    } else if (streaming.length < 3) {
      Left(TooFewStreamingInputs(described))
    } else if (chain.hasOuterJoins && streaming.length < inputs.length) {
      Left(OuterWithStaticInput(described))
    } else if (first.inputs.length < 3 ||
      (chain.hasOuterJoins && first.inputs.length < inputs.length)) {
      Left(NoSharedKey(described, chain.conjuncts.map(_.expression.sql)))
    } else {
      unstableKeyType(first).map(UnstableKeyType(described, _))
        .toLeft(first +: moreKeyGroups(classes, streaming.toSet -- first.inputs))
    }
  }

  /** The inputs of `candidates` in the key class with members over the most of them. */
  private def largestGroup(
      classes: Seq[EquivalentKeys.KeyClass],
      candidates: Set[Int]): KeyGroup = {
    val group = classes.map(_.map(_._1).toSet.intersect(candidates)).maxByOption(_.size)
      .getOrElse(Set.empty[Int])
    val keyClasses = classes.filter(keyClass => group.subsetOf(keyClass.map(_._1).toSet))
      .map(_.filter { case (input, _) => group(input) })
    KeyGroup(group.toSeq.sorted, keyClasses)
  }

  /** The groups of three or more of the streaming inputs `left` on a key, largest first. */
  private def moreKeyGroups(
      classes: Seq[EquivalentKeys.KeyClass],
      left: Set[Int]): Seq[KeyGroup] = {
    val group = largestGroup(classes, left)
    if (group.inputs.length < 3 || unstableKeyType(group).isDefined) Nil
    else group +: moreKeyGroups(classes, left -- group.inputs)
  }

  /** A type of the group's key that the operator cannot compare by its bytes, if any. */
  private def unstableKeyType(group: KeyGroup): Option[DataType] =
    group.keyClasses.map(_.head._2.dataType).find(!UnsafeRowUtils.isBinaryStable(_))
}
