package io.github.sparkmultijoin.ttl

import java.util.concurrent.TimeUnit

import scala.util.Try

import org.apache.spark.network.util.JavaUtils
import org.apache.spark.sql.catalyst.util.IntervalUtils

/**
 * A state TTL's duration, as `multi-join.state-ttl` and the STATE_TTL hint take it.
 *
 * Why both forms: Spark users write durations as `withWatermark` takes them ("10 minutes",
 * "1 day"), and Spark's own time settings take "10m" or "1d". Both are read; a month counts 31
 * days, as `withWatermark` counts it. One parser serves the setting and the hint, so that a bad
 * value gets the same error with the same examples from either.
 */
object StateTtl {

  /** What a duration looks like, for errors. */
  val Examples: String = "a positive duration such as '1 day', '90 minutes' or '10 seconds' " +
    "(as withWatermark takes them), or '1d', '30m', '10s'"

  /** The milliseconds `text` means, or why it is not a positive duration. */
  def parseMs(text: String): Either[String, Long] = {
    val trimmed = Option(text).map(_.trim).getOrElse("")
    val millis = Try(JavaUtils.timeStringAsMs(trimmed)).orElse(Try(
      IntervalUtils.getDuration(IntervalUtils.fromIntervalString(trimmed), TimeUnit.MILLISECONDS)))
    millis.toOption.filter(_ > 0).toRight(s"'$text' is not $Examples.")
  }

  /** `millis` in the largest unit that writes it exactly, as EXPLAIN shows a TTL: `90m`. */
  def show(millis: Long): String = {
    val units = Seq(86400000L -> "d", 3600000L -> "h", 60000L -> "m", 1000L -> "s")
    units.collectFirst { case (size, unit) if millis % size == 0 => s"${millis / size}$unit" }
      .getOrElse(s"${millis}ms")
  }
}
