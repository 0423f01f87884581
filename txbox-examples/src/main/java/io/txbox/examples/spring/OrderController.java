package io.txbox.examples.spring;

import java.sql.SQLException;
import java.util.Map;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * {@code POST /orders?customer=c-1&sku=sku-1&quantity=2}: places an order and answers with its id.
 *
 * <pre>{@code
 * curl -X POST 'localhost:8080/orders?customer=c-1&sku=sku-1&quantity=2'
 * {"orderId":"4f0c..."}
 * }</pre>
 */
@RestController
class OrderController {
  private final Orders orders;

  OrderController(Orders orders) {
    this.orders = orders;
  }

  @PostMapping("/orders")
  Map<String, String> place(@RequestParam(defaultValue = "guest") String customer, @RequestParam String sku,
      @RequestParam(defaultValue = "1") int quantity) throws SQLException {
    return Map.of("orderId", orders.place(customer, sku, quantity).toString());
  }

  @ExceptionHandler(IllegalArgumentException.class)
  ResponseEntity<Map<String, String>> unknownProduct(IllegalArgumentException e) {
    return ResponseEntity.badRequest().body(Map.of("error", e.getMessage()));
  }
}
