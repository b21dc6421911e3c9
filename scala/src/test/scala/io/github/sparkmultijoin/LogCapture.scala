package io.github.sparkmultijoin

import scala.collection.mutable.ArrayBuffer

import org.apache.logging.log4j.LogManager
import org.apache.logging.log4j.core.{LogEvent, Logger}
import org.apache.logging.log4j.core.appender.AbstractAppender
import org.apache.logging.log4j.core.config.Property

/** What a class logs (as Spark's Logging names its logger) while `body` runs: "LEVEL message". */
object LogCapture {

  def of(logging: Class[_])(body: => Unit): Seq[String] = {
    val lines = ArrayBuffer.empty[String]
    val appender = new AbstractAppender("capture", null, null, true, Property.EMPTY_ARRAY) {
      override def append(event: LogEvent): Unit = lines.synchronized {
        lines += s"${event.getLevel} ${event.getMessage.getFormattedMessage}"
      }
    }
    val logger = LogManager.getLogger(logging.getName.stripSuffix("$")).asInstanceOf[Logger]
    appender.start()
    logger.addAppender(appender)
    try body
    finally {
      logger.removeAppender(appender)
      appender.stop()
    }
    lines.synchronized(lines.toList)
  }
}
